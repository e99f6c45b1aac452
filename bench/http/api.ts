/** @module api — the few svc REST calls the HTTP bench makes outside the timed load (fetch, keep-alive). */

export class Api {
  constructor(
    readonly url: string,
    readonly key: string,
  ) {}

  async call(method: string, path: string, body?: unknown, contentType = "application/json"): Promise<Record<string, unknown>> {
    const raw = body === undefined || body instanceof Uint8Array ? body : JSON.stringify(body);
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { "api-key": this.key, "content-type": contentType },
      body: raw as BodyInit | undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  createIndex(name: string, dimension: number) {
    return this.call("POST", "/v1/indexes", {
      name,
      dimension,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
    });
  }

  deleteIndex(name: string) {
    return this.call("DELETE", `/v1/indexes/${name}`);
  }

  async count(name: string): Promise<number> {
    return (await this.call("GET", `/v1/indexes/${name}/describe_index_stats`)).totalVectorCount as number;
  }

  async query(name: string, body: Uint8Array): Promise<Array<{ id: string; score: number }>> {
    return (await this.call("POST", `/v1/indexes/${name}/query`, body)).matches as Array<{ id: string; score: number }>;
  }
}
