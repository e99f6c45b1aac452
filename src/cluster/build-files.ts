/**
 * @module build-files — cluster mode's helper outputs: each tenant's build directory kept as objects of
 * the JetStream object store `svc_build` (replicated like the streams), object `<tenant>/<path>` (the
 * path relative to the build directory, `/`-separated). Any node serves a helper build: it fetches the
 * inputs the request names into a scratch directory, runs the helper, and stores the output before it
 * answers (an acknowledged output is on a quorum of nats-servers). Concurrent builds of one path: the
 * last stored wins, as with files. No leader: nothing to fail over.
 */
import { Objm, StorageType, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { untilQuorum } from "./quorum.js";

/** The object store of helper outputs (its stream is `OBJ_svc_build`). */
export const BUILD_BUCKET = "svc_build";
/** How long a read or a write of an output retries while JetStream elects leaders (ms), then 503 E_NO_QUORUM. */
const QUORUM_MS = 15_000;

export class BuildFiles {
  private constructor(private readonly os: ObjectStore) {}

  /** Open the bucket, creating it (R `replicas`, file storage) when missing. */
  static async open(nc: NatsConnection, opts: { replicas?: number } = {}): Promise<BuildFiles> {
    return new BuildFiles(await new Objm(nc).create(BUILD_BUCKET, { replicas: opts.replicas ?? 3, storage: StorageType.File }));
  }

  /** The bytes of `path` in the tenant's build directory, or null when there is none. */
  get(tenant: string, path: string): Promise<Uint8Array | null> {
    return untilQuorum(`read the helper output ${path}`, QUORUM_MS, () => this.os.getBlob(`${tenant}/${path}`), { field: "build" });
  }

  /** Store `data` as `path` of the tenant's build directory (replacing it); resolves once JetStream acknowledged every chunk. */
  async put(tenant: string, path: string, data: Uint8Array): Promise<void> {
    await untilQuorum(`store the helper output ${path}`, QUORUM_MS, () => this.os.putBlob({ name: `${tenant}/${path}` }, data), {
      field: "build",
    });
  }
}
