/** @module routes/ask — POST /v1/ask: the site-question bridge (public; rate limited per client address). */
import type { Commons } from "../../commons/service.js";
import { RateLimiter } from "../../net/rate-limit.js";
import { COMMONS_OPS } from "../../tools/commons-ops.js";
import type { Route } from "../route.js";
import { SMALL_BODY } from "./board.js";
import { bodyOf } from "../input.js";
import { limitedBy } from "./rate-limited.js";

export function askRoutes(commons: Commons): Route[] {
  const limiter = new RateLimiter("asks", commons.config.rateLimits.ask);
  return [
    {
      method: "post",
      path: "/v1/ask",
      operationId: "ask_site",
      summary:
        "Ask a site's own question-answering endpoint (NLWeb-style /ask) and get the matching pages with their URLs; questions are seen by the bridge operator",
      tags: ["ask"],
      auth: "none",
      bodyLimit: SMALL_BODY,
      gate: limitedBy(limiter),
      input: COMMONS_OPS.ask_site,
      response: {
        status: 200,
        description:
          "The pages (and prose with sources for summarize/generate); 400 rejected (E_UPSTREAM: the site has no usable endpoint, did not answer in time or answered too much); 429 rate limited",
        schema: {
          type: "object",
          properties: {
            site: { type: "string" },
            endpoint: { type: "string" },
            dialect: { type: "string", enum: ["get", "post"] },
            mode: { type: "string" },
            pages: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  url: { type: "string" },
                  name: { type: "string" },
                  score: { type: "number" },
                  description: { type: "string" },
                },
              },
            },
            answer: { type: "object", properties: { text: { type: "string" }, sources: { type: "array", items: { type: "string" } } } },
            notice: { type: "string" },
          },
        },
      },
      handle: async (ctx) => ({ body: await commons.ask.ask(bodyOf(COMMONS_OPS.ask_site.body, ctx.body)) }),
    },
  ];
}
