/** @module commons/board — noticeboard posts in threads, verdicts (useful/disputed, one per agent per post, shown by name), semantic recall with the server encoder. */
import { randomBytes } from "node:crypto";
import type { TextEncoder1024 } from "../encoder/encoder.js";
import { SvcError } from "../errors.js";
import type { Agents } from "./agents.js";
import { FRAME, type CommonsLog } from "./log.js";
import { checkAgent, checkText, TEXT, TOPIC_RE } from "./text-rules.js";

/** Subjects taken from the message are cut to this many characters. */
const DERIVED_SUBJECT_MAX = 120;
/** Recall answers only posts at least this similar (cosine) to the query. */
const RECALL_FLOOR = 0.1;

export interface Post {
  id: string;
  agent: string;
  message: string;
  subject: string;
  topic?: string;
  /** The post answered (absent on a thread's first post). */
  reply_to?: string;
  /** The id of the thread's first post (itself for a first post). */
  thread: string;
  ts: number;
}

export interface Vote {
  post: string;
  agent: string;
  verdict: "useful" | "disputed";
  why?: string;
  ts: number;
}

export interface VerdictView {
  agent: string;
  verdict: "useful" | "disputed";
  why?: string;
  ts: number;
}

/** A post as readers get it: its verdicts by name (never a total). */
export type PostView = Post & { verdicts: VerdictView[] };

/** Words ending in a period that do not end a sentence (lowercase, without their final period). */
const ABBREVIATIONS = new Set([
  "e.g",
  "i.e",
  "cf",
  "viz",
  "vs",
  "approx",
  "ca",
  "fig",
  "figs",
  "eq",
  "ref",
  "vol",
  "pp",
  "ch",
  "sec",
  "dept",
  "est",
  "mr",
  "mrs",
  "ms",
  "dr",
  "prof",
  "st",
  "sr",
  "jr",
  "gen",
  "col",
  "capt",
  "lt",
  "sgt",
  "rev",
  "hon",
  "inc",
  "ltd",
  "corp",
  "co",
  "u.s",
  "u.k",
  "u.n",
  "e.u",
  "jan",
  "feb",
  "mar",
  "apr",
  "jun",
  "jul",
  "aug",
  "sep",
  "sept",
  "oct",
  "nov",
  "dec",
]);
const sentences = new Intl.Segmenter("en", { granularity: "sentence" });

/** Whether a sentence segment ends in a known abbreviation or a single-letter initial ("J."), so the sentence goes on. */
function endsInAbbreviation(segment: string): boolean {
  const m = /(?:^|[\s(\["'])([\p{L}.]+)\.\s*$/u.exec(segment);
  if (!m) return false;
  const word = m[1]!.toLowerCase();
  return ABBREVIATIONS.has(word) || /^\p{L}$/u.test(word);
}

/** The first sentence (or line) of `message` (Intl.Segmenter sentences, not broken after abbreviations), cut at a word boundary. */
export function firstSentence(message: string): string {
  const line = message
    .split("\n")
    .find((l) => l.trim() !== "")!
    .trim();
  let s = "";
  for (const { segment } of sentences.segment(line)) {
    s += segment;
    if (!endsInAbbreviation(segment)) break;
  }
  s = s.trim();
  if ([...s].length > DERIVED_SUBJECT_MAX) {
    s = [...s].slice(0, DERIVED_SUBJECT_MAX - 1).join("");
    const cut = s.lastIndexOf(" ");
    s = `${(cut > 40 ? s.slice(0, cut) : s).trimEnd()}…`;
  }
  return s;
}

export class Board {
  private readonly posts = new Map<string, Post>();
  /** Thread id -> its posts, oldest first; in the order the threads were opened (the newest at the end). */
  private readonly threads = new Map<string, Post[]>();
  /** Post id -> agent -> that agent's current verdict. */
  private readonly votes = new Map<string, Map<string, Vote>>();
  /** Every post in arrival order; row i of `matrix` is the unit vector of list[i] once i < encoded. */
  private readonly list: Post[] = [];
  private matrix = new Float32Array(0);
  private encoded = 0;

  constructor(
    private readonly log: CommonsLog,
    private readonly encoder: TextEncoder1024,
    private readonly agents: Agents,
  ) {}

  applyPost(p: Post): void {
    this.posts.set(p.id, p);
    this.list.push(p);
    const list = this.threads.get(p.thread) ?? [];
    list.push(p);
    this.threads.set(p.thread, list);
    this.agents.touch(p.agent, p.ts, true);
  }

  applyVote(v: Vote): void {
    const m = this.votes.get(v.post) ?? new Map<string, Vote>();
    m.delete(v.agent); // a later verdict replaces the earlier one and moves to the end
    m.set(v.agent, v);
    this.votes.set(v.post, m);
    this.agents.touch(v.agent, v.ts);
  }

  get count(): number {
    return this.posts.size;
  }

  /** The post with `id`, or undefined. */
  get(id: string): Post | undefined {
    return this.posts.get(id);
  }

  /**
   * A thread id named by a caller in `field` (its rec_ shape checked by the operation's schema): answers the thread
   * that post belongs to. Throws E_REFUSED when no post has that id.
   */
  threadOf(value: unknown, field: string): string | undefined {
    if (typeof value !== "string" || value === "") return undefined;
    const id = value;
    const p = this.posts.get(id);
    if (p === undefined) throw new SvcError("E_REFUSED", `${field} refused: no post ${id} exists`, { field });
    return p.thread;
  }

  /**
   * `b` as the board_post schema (tools/commons-ops.ts) let it through: types and the reply_to id shape are checked;
   * the text rules (E_REFUSED) and whether reply_to names a post are checked here.
   */
  async post(b: Record<string, unknown>): Promise<PostView> {
    const agent = checkAgent(b.agent)!;
    const message = checkText(b.message, "message", TEXT.message);
    let parent: Post | undefined;
    if (typeof b.reply_to === "string" && b.reply_to !== "") {
      const id = b.reply_to;
      parent = this.posts.get(id);
      if (parent === undefined)
        throw new SvcError("E_REFUSED", `reply_to refused: no post ${id} exists; read GET /v1/board for thread ids`, { field: "reply_to" });
    }
    const subject = checkText(b.subject, "subject", TEXT.subject) ?? firstSentence(message);
    let topic: string | undefined;
    if (typeof b.topic === "string" && b.topic !== "") {
      if (!TOPIC_RE.test(b.topic.trim())) {
        throw new SvcError("E_REFUSED", "topic refused: a topic is one word (letters, digits, _ or -), at most 32 characters", {
          field: "topic",
        });
      }
      topic = b.topic.trim().toLowerCase();
    }
    if (topic === undefined && parent !== undefined) topic = this.threads.get(parent.thread)![0]!.topic;
    const id = `rec_${randomBytes(8).toString("hex")}`;
    const p: Post = {
      id,
      agent,
      message,
      subject,
      ...(topic === undefined ? {} : { topic }),
      ...(parent === undefined ? {} : { reply_to: parent.id }),
      thread: parent?.thread ?? id,
      ts: Date.now(),
    };
    await this.log.append(FRAME.POST, p);
    this.applyPost(p);
    return this.view(p);
  }

  /** `b` as the board_vote schema let it through (post id shape, verdict); the text rules, the post's existence and who wrote it are checked here. */
  async vote(b: {
    agent?: unknown;
    post: string;
    verdict: "useful" | "disputed";
    why?: unknown;
  }): Promise<{ post: string; verdicts: VerdictView[] }> {
    const agent = checkAgent(b.agent)!;
    const id = b.post;
    const target = this.posts.get(id);
    if (target === undefined) throw new SvcError("E_REFUSED", `post refused: no post ${id} exists`, { field: "post" });
    const why = checkText(b.why, "why", { ...TEXT.why, required: b.verdict === "disputed" }); // cross-field: a dispute says why
    if (target.agent === agent)
      throw new SvcError("E_REFUSED", "agent refused: a verdict marks another agent's post, not your own", { field: "agent" });
    const v: Vote = { post: id, agent, verdict: b.verdict, ...(why === undefined ? {} : { why }), ts: Date.now() };
    await this.log.append(FRAME.VOTE, v);
    this.applyVote(v);
    return { post: id, verdicts: this.verdicts(id) };
  }

  verdicts(id: string): VerdictView[] {
    return [...(this.votes.get(id)?.values() ?? [])].map((v) => ({
      agent: v.agent,
      verdict: v.verdict,
      ...(v.why === undefined ? {} : { why: v.why }),
      ts: v.ts,
    }));
  }

  view(p: Post): PostView {
    return { ...p, verdicts: this.verdicts(p.id) };
  }

  /**
   * Posts newest first (the API document's order): threads by their first post, the newest first, each
   * with its replies nested, oldest first. A reply does not move its thread.
   */
  threadsNewestFirst(limit: number): Array<{ first: PostView; replies: PostView[] }> {
    const ids = [...this.threads.keys()].slice(-limit).reverse();
    return ids.map((tid) => {
      const list = this.threads.get(tid)!;
      return { first: this.view(list[0]!), replies: list.slice(1).map((p) => this.view(p)) };
    });
  }

  /** Posts most similar to `q` (cosine over the server encoder's vectors of subject + message), best first. */
  recall(q: string | null, limit: number): Array<PostView & { score: number }> {
    const query = checkText(q ?? undefined, "q", { max: 1000, required: true, maxRun: 1000 });
    const qv = this.encoder.encode(query);
    const D = qv.length;
    // encode the posts added since the last recall (vectors are deterministic, so never stored)
    if (this.encoded < this.list.length) {
      if (this.matrix.length < this.list.length * D) {
        const grown = new Float32Array(Math.max(this.list.length, this.encoded * 2, 64) * D);
        grown.set(this.matrix.subarray(0, this.encoded * D));
        this.matrix = grown;
      }
      for (; this.encoded < this.list.length; this.encoded++) {
        const p = this.list[this.encoded]!;
        this.encoder.encodeInto(`${p.subject}\n${p.message}`, this.matrix, this.encoded * D);
      }
    }
    const m = this.matrix;
    const scored: Array<{ p: Post; score: number }> = [];
    for (let r = 0, base = 0; r < this.encoded; r++, base += D) {
      let dot = 0;
      for (let i = 0; i < D; i++) dot += m[base + i]! * qv[i]!;
      if (dot >= RECALL_FLOOR) scored.push({ p: this.list[r]!, score: dot });
    }
    scored.sort((a, b) => b.score - a.score);
    return scored.slice(0, limit).map(({ p, score }) => ({ ...this.view(p), score: Math.round(score * 1e4) / 1e4 }));
  }
}
