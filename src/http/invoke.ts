/** @module invoke — what a REST request and an MCP tool call share: resolve the key to a principal, check the wallet, run the handler, charge. */
import type { KeyBook, Principal } from "../account/keys.js";
import type { WalletBook } from "../account/wallet-book.js";
import { SvcError } from "../errors.js";
import { checkInput, requestBodyOf } from "./input.js";
import type { HttpMetrics } from "./metrics.js";
import type { Reply, RequestContext, Route } from "./route.js";

export interface InvokeDeps {
  keys: KeyBook;
  wallets: WalletBook;
  metrics: HttpMetrics;
  /** false: no keys needed, every call acts as the admin of tenant "local" (loopback only). */
  auth: boolean;
}

/** The headers a key can come in: `Api-Key: <key>` or `Authorization: Bearer <key>` ("" when absent). */
export interface Credentials {
  apiKey: string;
  authorization: string;
}

export const LOCAL_PRINCIPAL: Principal = { tenant: "local", admin: true, keyId: null };

/** The key sent, or null. */
export function presentedKey(c: Credentials): string | null {
  return c.apiKey || /^bearer\s+(.+)$/i.exec(c.authorization)?.[1]?.trim() || null;
}

/** Resolve the caller of `auth`-level operations; throws E_AUTH (401) / E_FORBIDDEN (403). */
export function authenticate(auth: Route["auth"], c: Credentials, keys: KeyBook, authOn: boolean): Principal {
  if (auth === "none" || !authOn) return LOCAL_PRINCIPAL;
  const key = presentedKey(c);
  if (!key)
    throw new SvcError("E_AUTH", "missing API key: send it as 'Api-Key: <key>' or 'Authorization: Bearer <key>'", { field: "api-key" });
  const p = keys.authenticate(key);
  if (p === null) throw new SvcError("E_AUTH", "unknown or revoked API key", { field: "api-key" });
  if (auth === "admin" && !p.admin) throw new SvcError("E_FORBIDDEN", "this operation needs an admin key", { field: "api-key" });
  return p;
}

/**
 * Run an authenticated request. A metered route (non-admin caller) first reserves its price bound in the
 * tenant's wallet (`route.usageBound`, else the bare request price; 402 E_WALLET_EMPTY when it does not fit),
 * then runs the handler and settles to the actual usage, or releases the hold when the handler throws.
 * A write's reply waits for its charge to be durable; a read's does not (`Route.readOnly`).
 */
export async function execute(route: Route, ctx: RequestContext, deps: Pick<InvokeDeps, "wallets" | "metrics">): Promise<Reply> {
  refuseNullBody(route, ctx.body);
  refuseUnknownFields(route, ctx.body);
  // A route without a gate or a usage bound (a query) takes no await for it: each is a microtask hop.
  if (route.gate !== undefined) await route.gate(ctx);
  checkInput(route, ctx);
  const metered = route.meter !== undefined && !ctx.principal.admin;
  const bound = metered && route.usageBound !== undefined ? await route.usageBound(ctx) : undefined;
  const hold = metered ? await deps.wallets.reserve(ctx.principal.tenant, route.meter!, bound ?? {}) : null;
  let reply: Reply;
  try {
    reply = await route.handle(ctx);
  } catch (err) {
    if (hold) await deps.wallets.release(hold);
    throw err;
  }
  if (hold) {
    const read = route.method === "get" || route.readOnly === true;
    const charged = deps.wallets.settle(hold, route.meter!, ctx.usage, read);
    // A write's charge is durable before its reply, as the write is. A read leaves nothing behind that
    // could outlive its charge: the charge leaves the balance now (no later request can spend it), its frame
    // is written with the other reads' charges of this event-loop turn (one write) and the ledger's next group
    // commit, right after the reply, makes it durable; a crash in between forgets it, in the tenant's favour.
    // This saves a read the fdatasync (0.2-0.5 ms of a ~0.5 ms query) and its own write.
    if (read) charged.catch(() => deps.metrics.chargeLost());
    else await charged;
  }
  deps.metrics.usage(ctx.usage);
  return reply;
}

/**
 * A JSON `null` body is a body, not an absent one: where the route takes an object it is 400 naming
 * `body` (a handler reading `ctx.body ?? {}` would otherwise take it for no body and answer 200).
 */
export function refuseNullBody(route: Route, body: unknown): void {
  if (body === null && !route.rawBody && requestBodyOf(route)?.type === "object")
    throw new SvcError("E_BAD_REQUEST", "the body must be an object, not null", { field: "body" });
}

/**
 * The one rule for unknown fields, on every route whose request body schema lists its
 * properties (REST and MCP alike): a top-level field the schema does not name is refused with
 * 400 naming it, so a misspelt option never silently does nothing. Nested free-form objects
 * (metadata, spec, tags, helper arguments) are not checked here.
 */
export function refuseUnknownFields(route: Route, body: unknown): void {
  const schema = route.rawBody ? undefined : requestBodyOf(route);
  const props = schema?.properties as Record<string, unknown> | undefined;
  if (props === undefined || schema?.additionalProperties !== undefined) return;
  if (typeof body !== "object" || body === null || Array.isArray(body) || Buffer.isBuffer(body)) return;
  for (const k of Object.keys(body)) {
    if (!Object.hasOwn(props, k))
      throw new SvcError("E_BAD_REQUEST", `unknown field '${k}'; this operation takes ${Object.keys(props).join(", ")}`, { field: k });
  }
}
