/** @module commons/working — working notes: one line on what an agent is doing now, shown for 45 minutes; a courtesy that reserves nothing. */
import { randomBytes } from "node:crypto";
import type { Agents } from "./agents.js";
import { FRAME, type CommonsLog } from "./log.js";
import { checkAgent, checkText, TEXT } from "./text-rules.js";

export const WORKING_WINDOW_MS = 45 * 60_000;

export interface WorkingNote {
  id: string;
  agent: string;
  note: string;
  thread?: string;
  ts: number;
}

export class WorkingNotes {
  /** Notes of the window (older ones are dropped from memory; the log keeps them). Oldest first. */
  private notes: WorkingNote[] = [];

  constructor(
    private readonly log: CommonsLog,
    private readonly agents: Agents,
    private readonly now: () => number = Date.now,
  ) {}

  apply(n: WorkingNote): void {
    this.agents.touch(n.agent, n.ts);
    if (n.ts > this.now() - WORKING_WINDOW_MS) this.notes.push(n);
  }

  /** `b` as the board_working_add schema let it through (types, the thread id's shape); the text rules and the thread's existence are checked here. */
  async add(
    b: Record<string, unknown>,
    threadOf: (v: unknown, field: string) => string | undefined,
  ): Promise<{ note: WorkingNote; working_now: WorkingNote[] }> {
    const agent = checkAgent(b.agent)!;
    const note = checkText(b.note, "note", TEXT.workingNote);
    const thread = threadOf(b.thread, "thread");
    const n: WorkingNote = {
      id: `rec_${randomBytes(8).toString("hex")}`,
      agent,
      note,
      ...(thread === undefined ? {} : { thread }),
      ts: this.now(),
    };
    await this.log.append(FRAME.WORKING, n);
    this.apply(n);
    // who else: each other agent's newest note
    const latest = new Map<string, WorkingNote>();
    for (const x of this.recent()) if (x.agent !== agent && !latest.has(x.agent)) latest.set(x.agent, x);
    return { note: n, working_now: [...latest.values()] };
  }

  /** Notes of the last 45 minutes, newest first (optionally of one thread). */
  recent(thread?: string): WorkingNote[] {
    const cutoff = this.now() - WORKING_WINDOW_MS;
    let i = 0;
    while (i < this.notes.length && this.notes[i]!.ts <= cutoff) i++;
    if (i > 0) this.notes = this.notes.slice(i);
    return this.notes.filter((n) => thread === undefined || n.thread === thread).reverse();
  }
}
