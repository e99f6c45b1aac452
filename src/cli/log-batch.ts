/** @module log-batch — `svc serve`'s log destination: lines gathered in an array and handed to the file writer a batch at a time. */

/** What the batch writes through: pino's destination (SonicBoom), which owns the fd, partial writes and EAGAIN. */
export interface LineSink {
  write(data: string): boolean;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
  readonly destroyed?: boolean;
}

/**
 * A pino destination that keeps lines in an array until `batchChars` characters wait (or every `flushMs`), then
 * writes them to `sink` as one string. SonicBoom measures the UTF-8 length of the string it is still gathering on
 * every write (`Buffer.byteLength` of a growing concatenation), so a line cost time in proportion to the batch
 * before it: 4-5 µs of CPU a request line at a 4 KiB batch (bench/RESULTS.md "served-cpu"); here a line costs an
 * array push. Line order is kept; `flush` and `flushSync` write everything waiting first. Lines still waiting when
 * the process exits are written synchronously by an exit handler.
 */
export class LineBatch {
  private lines: string[] = [];
  /** Characters in `lines` (UTF-16 units: a threshold only). */
  private chars = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly onExit = () => this.flushSync();

  constructor(
    private readonly sink: LineSink,
    private readonly batchChars: number,
    flushMs: number,
  ) {
    this.timer = setInterval(() => this.handOver(), flushMs).unref();
    process.on("exit", this.onExit);
  }

  write(line: string): boolean {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= this.batchChars) this.handOver();
    return true;
  }

  /** Write everything waiting; `cb` once the sink has written it. */
  flush(cb?: (err?: Error) => void): void {
    this.handOver();
    if (this.sink.destroyed) cb?.();
    else this.sink.flush(cb);
  }

  flushSync(): void {
    this.handOver();
    if (!this.sink.destroyed) this.sink.flushSync();
  }

  /** Stop the timer and the exit handler (tests; a server's log lives as long as the process). */
  close(): void {
    this.handOver();
    clearInterval(this.timer);
    process.off("exit", this.onExit);
  }

  private handOver(): void {
    if (this.lines.length === 0 || this.sink.destroyed) return;
    const data = this.lines.length === 1 ? this.lines[0]! : this.lines.join("");
    this.lines = [];
    this.chars = 0;
    this.sink.write(data);
  }
}
