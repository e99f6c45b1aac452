/** @module tools/hd — hyperdimensional reasoning: knowledge graph, causal models, analogy, role-filler binding. */
import { z } from "zod";
import { DESTROY, fileTools, op, out, READ, strings, UPSERT, WRITE } from "./define.js";
import { graphName as graph, HD_OPS, modelName as model } from "./hd-ops.js";
import type { Tool } from "./tool.js";

// A tool that is one operation takes that operation's schema (hd-ops.ts) plus the graph or model it runs on.
const answer = out({ object: z.string().nullable(), confidence: z.number() });

const kgAddFacts = op("hd_kg_add", {
  name: "hd_kg_add_fact",
  title: "Add facts",
  rename: { graph: "name" },
  annotations: UPSERT,
  description:
    "Add (subject, relation, object) facts to a knowledge graph (created by its first facts); facts already present are skipped.",
  input: z.object({ graph, ...HD_OPS.hd_kg_add.body.shape }),
  output: out({ added: z.number().int(), relations: strings }),
});
const kgDeleteFacts = op("hd_kg_delete_fact", {
  name: "hd_kg_delete_fact",
  title: "Delete facts",
  rename: { graph: "name" },
  annotations: DESTROY,
  description: "Remove facts from a knowledge graph exactly (each present fact is subtracted from its relation's bundle).",
  input: z.object({ graph, ...HD_OPS.hd_kg_delete_fact.body.shape }),
  output: out({ deleted: z.number().int() }),
});
const kgQuery = op("hd_kg_query", {
  name: "hd_kg_query",
  title: "Ask the graph",
  rename: { graph: "name" },
  annotations: READ,
  description:
    "The object of (subject, relation) with a calibrated confidence (the probability it is right); object is null when confidence < 0.05, i.e. the graph does not know.",
  input: z.object({ graph, ...HD_OPS.hd_kg_query.body.shape }),
  output: answer,
});
const kgStats = op("hd_kg_stats", {
  name: "hd_kg_stats",
  title: "Graph statistics",
  rename: { graph: "name" },
  annotations: READ,
  description:
    "Relations, facts per relation, entities, expected accuracy, capacity (facts at >= 0.99 accuracy), load (facts / capacity) and overloaded (load > 1), and capacity left.",
  input: z.object({ graph }),
  output: out({ name: z.string(), relations: z.array(z.unknown()), facts: z.number().int(), entities: z.number().int() }),
});
const kgDrop = op("hd_kg_delete", {
  name: "hd_kg_drop",
  title: "Drop a graph",
  rename: { graph: "name" },
  annotations: DESTROY,
  description: "Delete a knowledge graph and all its facts.",
  input: z.object({ graph }),
  output: out({ deleted: z.boolean() }),
});

const [kgExport, kgImport] = fileTools({
  prefix: "hd_kg",
  what: "knowledge graph",
  ext: ".hdkg",
  arg: "graph",
  argSchema: graph,
  exportOp: "hd_kg_export",
  importOp: "hd_kg_import",
  importOutput: out({ imported: z.number().int(), relations: z.number().int() }),
});

const causalWorlds = op("hd_causal_worlds", {
  name: "hd_causal_add_worlds",
  title: "Upload worlds",
  rename: { model: "name" },
  annotations: WRITE,
  description:
    "Upload worlds (rows of categorical variables: worlds[i][j] is variable j's category) to a causal model, creating it or appending. Optional parents (a DAG) lets interventions adjust for confounders.",
  input: z.object({ model, ...HD_OPS.hd_causal_worlds.body.shape }),
  output: out({ name: z.string(), rows_added: z.number().int(), rows_total: z.number().int() }),
});
const causalQuery = op("hd_causal_query", {
  name: "hd_causal_query",
  title: "Causal query",
  rename: { model: "name" },
  annotations: READ,
  description:
    "observation: P(query_var = query_value | condition_var = condition_value); intervention: P(query_var = query_value | do(condition_var = condition_value)), which cuts the confounder path. Returns the probability with its support counts and warnings.",
  input: z.object({ model, ...HD_OPS.hd_causal_query.body.shape }),
  output: out({ query_type: z.string(), probability: z.number().nullable(), support: z.record(z.string(), z.number()) }),
});
const causalDrop = op("hd_causal_delete", {
  name: "hd_causal_drop",
  title: "Delete a causal model",
  rename: { model: "name" },
  annotations: DESTROY,
  description: "Delete a causal model and its worlds.",
  input: z.object({ model }),
  output: out({ deleted: z.boolean() }),
});
const [causalExport, causalImport] = fileTools({
  prefix: "hd_causal",
  what: "causal model",
  ext: ".hdscm",
  arg: "model",
  argSchema: model,
  exportOp: "hd_causal_export",
  importOp: "hd_causal_import",
  importOutput: out({ name: z.string(), imported: z.number().int() }),
});

const analogy = op("hd_analogy", {
  name: "hd_analogy",
  title: "Analogy",
  annotations: READ,
  description:
    "Complete A:B::C:? over items with n_feat binary features (item i has feature f when bit f of i is set): D = C xor (A xor B), cleaned up against every item. Stateless and deterministic in (n_feat, seed).",
  input: HD_OPS.hd_analogy.body,
  output: out({
    candidate: z.number().int(),
    candidate_bits: z.array(z.number().int()),
    cosine: z.number(),
    runner_up: z.number().int(),
    ambiguity: z.number(),
    confidence: z.number(),
  }),
});

const bindRole = op("hd_roles_bind", {
  name: "bind_role",
  title: "Bind roles",
  annotations: READ,
  description:
    "Bind {role: filler} pairs (e.g. {agent: 'alice', action: 'deploy', object: 'api'}) into ONE 8,192-bit hypervector (base64): a compact, order-free record you can store and later query by role with read_roles. Deterministic in (pairs, seed).",
  input: HD_OPS.hd_roles_bind.body,
  output: out({ vector: z.string(), dimension: z.number().int(), pairs: z.number().int() }),
});
const readRoles = op("hd_roles_read", {
  name: "read_roles",
  title: "Read roles",
  annotations: READ,
  description:
    "Unbind a bind_role vector: for each role, the candidate filler it holds (null when none is clearly there), its cosine and margin over the runner-up. Candidates are the fillers to clean up against.",
  input: HD_OPS.hd_roles_read.body,
  output: out({ roles: z.array(out({ role: z.string(), filler: z.string().nullable(), cosine: z.number(), margin: z.number() })) }),
});

const kgList = op("hd_kg_list", {
  name: "hd_kg_list",
  title: "List graphs",
  annotations: READ,
  description: "The names of this tenant's knowledge graphs.",
  input: z.object({}),
  output: out({ graphs: strings }),
});
const causalList = op("hd_causal_list", {
  name: "hd_causal_list",
  title: "List causal models",
  annotations: READ,
  description: "This tenant's causal models with their variables, categories and row counts.",
  input: z.object({}),
  output: out({ models: z.array(out({ name: z.string() })) }),
});

export const kgTools: Tool[] = [kgList, kgAddFacts, kgDeleteFacts, kgQuery, kgStats, kgDrop, kgExport, kgImport];
export const causalTools: Tool[] = [causalList, causalWorlds, causalQuery, causalDrop, causalExport, causalImport];
/** Stateless hypervector tools: analogy, role-filler binding. */
export const hdTools: Tool[] = [analogy, bindRole, readRoles];
