/** @module commons/files — data files attached to the board: text as given, a list of rows as CSV, a JSON object as pretty JSON; size-capped, append-only. */
import { randomBytes } from "node:crypto";
import { SvcError } from "../errors.js";
import type { Agents } from "./agents.js";
import { FRAME, type CommonsLog } from "./log.js";
import { checkAgent, checkText, contentProblem, FILENAME_RE, TEXT } from "./text-rules.js";

/** Longest run without whitespace a file may hold (CSV lines have no spaces). */
const FILE_MAX_RUN = 4096;

export interface BoardFile {
  id: string;
  agent: string;
  filename: string;
  note?: string;
  /** Thread id; without it the file is listed only by GET /v1/board/files. */
  thread?: string;
  media_type: "text/plain" | "text/csv" | "application/json" | "text/markdown";
  /** UTF-8 bytes */
  bytes: number;
  content: string;
  ts: number;
}

export type FileMeta = Omit<BoardFile, "content">;

function mediaOf(filename: string): BoardFile["media_type"] {
  const ext = filename.toLowerCase().split(".").pop();
  return ext === "csv" ? "text/csv" : ext === "json" ? "application/json" : ext === "md" ? "text/markdown" : "text/plain";
}

function csvCell(v: unknown): string {
  const s = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** A list of rows as CSV: rows of cells, or objects (the header is their keys, first seen first). */
export function rowsToCsv(rows: unknown[]): string {
  if (rows.every((r) => Array.isArray(r))) return rows.map((r) => (r as unknown[]).map(csvCell).join(",")).join("\n") + "\n";
  if (rows.every((r) => typeof r === "object" && r !== null && !Array.isArray(r))) {
    const keys: string[] = [];
    for (const r of rows) for (const k of Object.keys(r as object)) if (!keys.includes(k)) keys.push(k);
    return (
      [keys.map(csvCell).join(","), ...rows.map((r) => keys.map((k) => csvCell((r as Record<string, unknown>)[k])).join(","))].join("\n") +
      "\n"
    );
  }
  throw new SvcError("E_BAD_REQUEST", "content as a list must hold rows: all lists of cells or all objects", { field: "content" });
}

export class BoardFiles {
  /** Oldest first. */
  private readonly files: BoardFile[] = [];
  private readonly byId = new Map<string, BoardFile>();

  constructor(
    private readonly log: CommonsLog,
    private readonly agents: Agents,
    private readonly maxBytes: number,
  ) {}

  apply(f: BoardFile): void {
    this.files.push(f);
    this.byId.set(f.id, f);
    this.agents.touch(f.agent, f.ts);
  }

  get count(): number {
    return this.files.length;
  }

  /**
   * Store a file. `input` is the JSON body {agent, filename, content, note?, thread?}; a raw upload
   * passes `raw` (the body) with the other fields taken from the query. `threadOf` resolves a thread id (E_REFUSED when none).
   * Types and the thread id's shape were checked by the board_file_add schema (tools/commons-ops.ts); the text and
   * file-name rules, the size and the thread's existence are checked here.
   */
  async add(b: Record<string, unknown>, threadOf: (v: unknown, field: string) => string | undefined, raw?: Buffer): Promise<FileMeta> {
    const agent = checkAgent(b.agent)!;
    if (typeof b.filename !== "string" || !FILENAME_RE.test(b.filename) || b.filename.includes("..")) {
      throw new SvcError("E_REFUSED", "filename refused: 1-100 letters, digits, spaces and . _ - ( ), no path", { field: "filename" });
    }
    const filename = b.filename;
    const note = checkText(b.note, "note", TEXT.fileNote);
    const thread = threadOf(b.thread, "thread");
    let content: string;
    let media = mediaOf(filename);
    if (raw !== undefined) {
      if (raw.length > this.maxBytes)
        throw new SvcError("E_REFUSED", `content refused: the file has ${raw.length} bytes; the limit is ${this.maxBytes}`, {
          field: "content",
        });
      const binary = () =>
        new SvcError("E_REFUSED", "content refused: a file is UTF-8 text; binary data is not accepted", { field: "content" });
      try {
        content = new TextDecoder("utf-8", { fatal: true }).decode(raw);
      } catch {
        throw binary();
      }
      if (raw.includes(0)) throw binary();
    } else if (typeof b.content === "string") {
      content = b.content;
    } else if (Array.isArray(b.content)) {
      if (b.content.length === 0) throw new SvcError("E_REFUSED", "content refused: it is empty", { field: "content" });
      content = rowsToCsv(b.content);
      media = "text/csv";
    } else if (typeof b.content === "object" && b.content !== null) {
      content = `${JSON.stringify(b.content, null, 2)}\n`;
      media = "application/json";
    } else {
      throw new SvcError("E_REFUSED", "content refused: it is required: the file as text, a list of rows or a JSON object", {
        field: "content",
      });
    }
    content = content.replace(/\r\n?/g, "\n");
    if (content.trim() === "") throw new SvcError("E_REFUSED", "content refused: it is empty", { field: "content" });
    const bytes = Buffer.byteLength(content);
    if (bytes > this.maxBytes)
      throw new SvcError("E_REFUSED", `content refused: the file has ${bytes} bytes; the limit is ${this.maxBytes}`, { field: "content" });
    const why = contentProblem(content, FILE_MAX_RUN);
    if (why !== null) throw new SvcError("E_REFUSED", `content refused: ${why}`, { field: "content" });
    const f: BoardFile = {
      id: `rec_${randomBytes(8).toString("hex")}`,
      agent,
      filename,
      ...(note === undefined ? {} : { note }),
      ...(thread === undefined ? {} : { thread }),
      media_type: media,
      bytes,
      content,
      ts: Date.now(),
    };
    await this.log.append(FRAME.FILE, f);
    this.apply(f);
    return meta(f);
  }

  /** Files newest first (without content), optionally of one thread. */
  list(limit: number, thread?: string): FileMeta[] {
    const out: FileMeta[] = [];
    for (let i = this.files.length - 1; i >= 0 && out.length < limit; i--) {
      const f = this.files[i]!;
      if (thread === undefined || f.thread === thread) out.push(meta(f));
    }
    return out;
  }

  get(id: string): BoardFile | undefined {
    return this.byId.get(id);
  }
}

function meta(f: BoardFile): FileMeta {
  const { content: _content, ...rest } = f;
  return rest;
}
