/** @module autocannon — minimal local typings for the subset of autocannon 9 the HTTP bench uses (the package ships no types). */
declare module "autocannon" {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }
    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      /** Stop after this many requests (instead of `duration`). */
      amount?: number;
      /** Seconds. */
      timeout?: number;
      /** Cycled through in order by every connection. */
      requests?: Request[];
    }
    /** Milliseconds, recorded whole (hdr-histogram with a 1 ms resolution). */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
      total: number;
    }
    interface Result {
      /** Seconds actually run. */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      "2xx": number;
      latency: Histogram;
      requests: Histogram & { sent: number };
      throughput: Histogram;
    }
  }
  function autocannon(opts: autocannon.Options): Promise<autocannon.Result>;
  export default autocannon;
}
