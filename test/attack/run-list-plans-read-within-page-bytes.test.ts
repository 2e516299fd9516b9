/**
 * A key's planning session holds 12 finished runs, each of a short input and a ~900 KB answer
 * (the model's text: MODEL_MAX_OUTPUT_CHARS is 1,000,000). After a restart (nothing of them held
 * in memory), one `GET /sessions/{id}/runs` (a page of 12 small run views, a few KB of JSON) reads
 * the runs' rows and each run's last plan event, not every message of every run (~11 MB here,
 * ~180 MB at `limit=200`). README: a page is bounded to 1 MiB and "the server reads only the
 * rows a page can hold".
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const A = "key-lists-reads-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const RUNS = 12;

describe("a page of a planning session's runs after a restart", () => {
  const reads = new ReadBytes();
  let server: TestServer | undefined;
  let sessionId: string;
  beforeAll(async () => {
    const first = await startTestServer({ env: { AGENT_API_KEYS: A } });
    const session = await first.request("POST", "/sessions", { body: { planning: true }, headers: auth });
    expect(session.status).toBe(201);
    sessionId = session.body.id;
    for (let i = 0; i < RUNS; i++) {
      first.upstream.enqueue({ text: `answer ${i} `.padEnd(900_000, "x") });
      const run = await first.request("POST", `/sessions/${sessionId}/runs?wait=true`, {
        body: { input: `question ${i}` },
        headers: auth,
      });
      expect(run.status).toBe(200);
      expect(run.body.run.status).toBe("finished");
    }
    await first.close({ keepDir: true });
    server = await startTestServer({ dir: first.dir, env: { AGENT_API_KEYS: A }, wrapStore: reads.wrap });
  }, 120_000);
  afterAll(() => server?.close());

  it("reads about what the page holds, not every message of every run on it", async () => {
    const s = server as TestServer;
    reads.bytes = 0;
    reads.calls.length = 0;
    reads.counting = true;
    const res = await fetch(`${s.url}/sessions/${sessionId}/runs?limit=${RUNS}`, { headers: auth });
    const text = await res.text();
    reads.counting = false;
    const body = JSON.parse(text);
    validateResponse({ method: "GET", path: "/sessions/{id}/runs", status: res.status, body });
    expect(body.items).toHaveLength(RUNS);
    expect(Buffer.byteLength(text)).toBeLessThan(100_000);
    // The page's rows (a few KB each) and a little more; not the runs' ~11 MB of messages.
    expect(reads.bytes, reads.calls.slice(0, 4).join(", ")).toBeLessThan(1_100_000);
  });
});
