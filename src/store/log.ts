/**
 * @module log — the seam between a collection and its log: the `Log` interface (append -> a position
 * acknowledged once durable), positions and their order, how a log is opened and replayed, and what
 * opening found. The WAL (wal.ts) implements it; so does cluster/jetstream-log.ts on a replicated
 * NATS JetStream stream, with `segment` 0 and `offset` = the stream sequence.
 */

/**
 * A point in the log, ordered by (segment, offset). For the WAL: segment id and byte offset inside
 * that segment's file (a frame's end position). A stream-backed log uses segment 0 and offset = the
 * stream sequence of the message. Checkpoints store it, so its shape is part of the on-disk format.
 */
export interface LogPosition {
  segment: number;
  offset: number;
}

/** True when `a` is at or before `b` in log order. */
export function atOrBefore(a: LogPosition, b: LogPosition): boolean {
  return a.segment < b.segment || (a.segment === b.segment && a.offset <= b.offset);
}

/** Frames and frame bytes appended, fsyncs and write calls (a log without such calls reports 0). */
export interface LogStats {
  frames: number;
  bytes: number;
  syncs: number;
  writes: number;
  /** Bytes of messages read back since open (a JetStream log's replay and tail; the WAL leaves it out). */
  read?: number;
}

/** An append-only log of typed msgpack frames. */
export interface Log {
  /**
   * Append one frame: `type` 1..255, `body` msgpack (typed arrays become bin). Resolves with the frame's
   * end position once it is durable (per the log's durability); frames keep call order.
   */
  append(type: number, body: unknown): Promise<LogPosition>;
  /** End position of the last appended frame, durable or not. */
  readonly position: LogPosition;
  readonly stats: LogStats;
  /** Make everything appended so far durable. */
  sync(): Promise<void>;
  /** Discard what lies at or before `pos` (whole units only, never what a later position needs); resolves with how many units went. */
  dropBefore(pos: LogPosition): Promise<number>;
  /** Make everything appended durable and stop; later appends reject with E_CLOSED. */
  close(): Promise<void>;
  /**
   * Only on a log opened in follow mode (several writers; cluster/jetstream-log.ts): resolves, once the
   * log has handed it to `LogReplay.onTail`, with the end of the last complete frame any writer had
   * appended when the call was made. Such a log hands every frame after the replay to onTail, its own
   * appends included, so the collection does not apply its own appends on acknowledgement.
   */
  head?(): Promise<LogPosition>;
  /**
   * Follow mode only: the lowest offset a reader starting after `pos` (a frame end this log handed
   * on) still reads — `pos.offset + 1`, or the first message of a frame split in chunks that
   * straddles `pos`; 0 when this log does not know (the log is then kept below `pos`).
   */
  neededAfter?(pos: LogPosition): number;
}

/** A frame delivered by replay. Binary values in `body` are views into a buffer that is never reused. */
export interface LogFrame {
  type: number;
  body: unknown;
  start: LogPosition;
  end: LogPosition;
}

/** What a collection asks of a log it opens: where replay starts and who receives the frames. */
export interface LogReplay {
  /** Replay frames ending after this position (the last checkpoint's). */
  from?: LogPosition;
  /** Also deliver the frames at or before `from` that are still kept (onFrame tells them apart by position). */
  prefix?: boolean;
  /** Called synchronously, in log order, for every frame replayed. */
  onFrame: (f: LogFrame) => void;
  /**
   * Follow mode: after the replay, called in log order with every later frame of the log (other
   * writers' and this log's own appends), once each, until the log is closed. A log that does not
   * follow (the WAL) never calls it.
   */
  onTail?: (f: LogFrame) => void;
}

/** Opens a collection's log and replays it; the collection takes its log only through this (collection.ts `openLog`). */
export type OpenLog = (replay: LogReplay) => Promise<{ log: Log; report: RecoveryReport }>;

export interface RecoveryReport {
  /** Segment files read, frames passed to onFrame (padding excluded), bytes of segment files read. */
  segments: number;
  frames: number;
  bytes: number;
  /** The torn tail cut off the last segment: file path, offset of the cut, bytes removed, frames they began (0 when none is recognisable), why. */
  tornTail: null | { file: string; offset: number; bytes: number; frames: number; reason: string };
  /** With `salvage`: damaged regions skipped (left in place for `svc repair`), in log order. */
  damaged: DamagedRegion[];
}

/** A damaged region that salvage skipped: from a bad frame to the next valid frame (or the segment's end). */
export interface DamagedRegion {
  file: string;
  offset: number;
  bytes: number;
  /** Frames that began in the region (sync words followed by a plausible length; at least 1). */
  frames: number;
  reason: string;
  /** True when the region ends at or before `from`: its frames were already covered by the caller's checkpoint. */
  beforeFrom: boolean;
}
