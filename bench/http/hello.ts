/** @module hello — the HTTP ceiling: a uWS app that reads the whole request body and answers a small JSON, nothing else. */
import uWS from "uWebSockets.js";

const REPLY = JSON.stringify({ matches: [], namespace: "" });

uWS
  .App()
  .any("/*", (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((_chunk, isLast) => {
      if (isLast && !aborted) res.cork(() => res.writeStatus("200 OK").writeHeader("content-type", "application/json").end(REPLY));
    });
  })
  .listen("127.0.0.1", 0, (socket) => {
    if (!socket) throw new Error("hello: cannot listen");
    process.stdout.write(`hello serving http://127.0.0.1:${uWS.us_socket_local_port(socket)}\n`);
  });
process.once("SIGTERM", () => process.exit(0));
