import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allSteps } from "../helpers/run-lists.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
let sessionId: string;
let runId: string;

beforeAll(async () => {
  server = await startTestServer({ env: { BODY_LIMIT_BYTES: "65536" } });
  server.upstream.fallback = () => ({ text: "ok" });
  sessionId = (await server.request("POST", "/sessions", { body: {} })).body.id;
  const run = await server.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input: "hi" } });
  runId = run.body.run.id;
});
afterAll(async () => {
  await server.close();
});

/** What is stored, counted through the store: sessions, runs, messages, events, open calls, steps. */
async function snapshot(): Promise<string> {
  const { store } = server.ctx;
  const sessions = (
    await store.sessions.list({ owner: null, limit: 1000, cursor: null, bytes: Number.POSITIVE_INFINITY })
  ).items;
  const counts = { sessions: sessions.length, runs: 0, messages: 0, events: 0, openCalls: 0, steps: 0 };
  for (const session of sessions) {
    const runs = (
      await store.runs.list({ sessionId: session.id, limit: 1000, cursor: null, bytes: Number.POSITIVE_INFINITY })
    ).items;
    counts.runs += runs.length;
    counts.messages += (await store.messages.history(session.id)).length;
    for (const run of runs) {
      counts.events += (await store.events.after(run.id, 0)).length;
      counts.openCalls += (await store.toolCalls.open(run.id)).length;
      counts.steps += (await allSteps(store, run.id)).length;
    }
  }
  return JSON.stringify(counts);
}

const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary", maxLength: 50 }),
  fc.constantFrom(
    "__proto__",
    "constructor",
    "prototype",
    "../../etc/passwd",
    "%00",
    "\u0000",
    "' OR 1=1 --",
    "-1",
    "1e309",
  ),
  fc.constant("x".repeat(70_000)),
);
const deep = (depth: number): unknown => (depth === 0 ? {} : { a: deep(depth - 1) });
const hostileJson = fc.oneof(
  fc.jsonValue(),
  fc.anything(),
  fc.dictionary(hostileString, fc.jsonValue(), { maxKeys: 5 }),
  fc.record({ input: fc.oneof(fc.jsonValue(), hostileString), maxTurns: fc.jsonValue(), approval: fc.jsonValue() }),
  fc.record({ decision: fc.oneof(hostileString, fc.jsonValue()), reason: fc.jsonValue() }),
  fc.record({ tools: fc.jsonValue(), workspace: hostileString, metadata: fc.jsonValue(), system: fc.jsonValue() }),
  fc.constant(deep(2000)),
);
const rawBody = fc.oneof(
  hostileJson.map((v) => {
    try {
      return JSON.stringify(v) ?? "null";
    } catch {
      return "{}";
    }
  }),
  fc.constant('{"__proto__":{"polluted":true},"input":"x"}'),
  fc.constant('{"constructor":{"prototype":{"polluted":true}}}'),
  fc
    .uint8Array({ maxLength: 64 })
    .map((bytes) => Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, ...bytes])),
  fc.string(),
);

const routes = (): { method: "GET" | "POST" | "DELETE"; path: string }[] => [
  { method: "POST", path: "/sessions" },
  { method: "GET", path: "/sessions" },
  { method: "GET", path: "/sessions/{s}" },
  { method: "DELETE", path: "/sessions/{x}" },
  { method: "GET", path: "/sessions/{s}/messages" },
  { method: "POST", path: "/sessions/{x}/runs" },
  { method: "GET", path: "/sessions/{s}/runs" },
  { method: "GET", path: "/runs/{r}" },
  { method: "DELETE", path: "/runs/{r}" },
  { method: "GET", path: "/runs/{r}/events" },
  { method: "GET", path: "/runs/{r}/steps" },
  { method: "GET", path: "/runs/{r}/approvals" },
  { method: "POST", path: "/runs/{r}/approvals/{x}" },
  { method: "GET", path: "/tools" },
  { method: "GET", path: "/healthz" },
  { method: "GET", path: "/nope/{x}" },
];

const idArb = fc.oneof(
  fc.constant("real"),
  hostileString.map((s) => encodeURIComponent(s.slice(0, 300))),
  fc.constantFrom("%E0%A4%A", "%", "..", "%2e%2e"),
);
const queryArb = fc.oneof(
  fc.constant(""),
  fc
    .dictionary(fc.constantFrom("limit", "cursor", "after", "wait", "x", "__proto__"), hostileString, { maxKeys: 3 })
    .map(
      (q) =>
        `?${Object.entries(q)
          .map(([k, v]) => `${k}=${encodeURIComponent(v.slice(0, 500))}`)
          .join("&")}`,
    ),
  fc.constantFrom("?limit=-1", "?limit=1e9", "?after=-5", "?wait=maybe", "?limit=abc&limit=2", "?%zz=1"),
);
const headersArb = fc.record(
  {
    "content-type": fc.constantFrom(
      "application/json",
      "text/plain",
      "application/x-www-form-urlencoded",
      "",
      "application/json; charset=latin1",
    ),
    "last-event-id": fc.oneof(
      hostileString.map((s) => s.replace(/[^\x20-\x7e]/g, "").slice(0, 200)),
      fc.constant("99999999999999999999"),
    ),
    accept: fc.constantFrom("text/event-stream", "application/json", "*/*", "text/html"),
    "idempotency-key": hostileString.map((s) => s.replace(/[^\x20-\x7e]/g, "").slice(0, 300) || "k"),
    authorization: fc.constantFrom("Bearer x", "Basic abc", "garbage"),
  },
  { requiredKeys: [] },
);

describe("hostile requests", () => {
  it("never answer 5xx, always the JSON error envelope, and a refused request changes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes()),
        idArb,
        idArb,
        queryArb,
        headersArb,
        rawBody,
        async (route, a, b, query, headers, body) => {
          const path =
            route.path
              .replace("{s}", a === "real" ? sessionId : a)
              .replace("{r}", a === "real" ? runId : a)
              .replace("{x}", b === "real" ? "call" : b) + query;
          const before = await snapshot();
          const res = await server.app.inject({
            method: route.method,
            url: path,
            headers: headers as Record<string, string>,
            ...(route.method === "POST" ? { payload: body } : {}),
          });
          expect(res.statusCode, `${route.method} ${path} -> ${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(
            500,
          );
          if (res.statusCode >= 400) {
            const parsed = JSON.parse(res.body);
            expect(typeof parsed.error.code).toBe("string");
            expect(typeof parsed.error.message).toBe("string");
            expect(await snapshot()).toBe(before);
          }
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        },
      ),
      { numRuns: 400, seed: Number(process.env.FUZZ_SEED ?? 20261130) },
    );
    expect((await server.request("GET", "/healthz")).status).toBe(200);
  }, 120_000);
});
