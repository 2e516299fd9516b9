/**
 * One key's run holds 30 calls awaiting approval, each with an input of ~100 KB (3 MB), and
 * 100 step traces of ~16 KB (1.6 MB). Each `GET /runs/{id}/approvals` or `/steps` (a request
 * of a few bytes) read every row of the run from the store and answered them all in one body,
 * however small a page the client asked for. Now a page reads the rows it holds, no more: at
 * most `limit` of them and 1 MiB.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadBytes } from "../helpers/read-bytes.js";
import { seedLargeRun } from "../helpers/run-lists.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const RUN = "run_listreads000000000000001";

describe("a key paging its run's 3 MB of pending approvals and 1.6 MB of steps", () => {
  const reads = new ReadBytes();
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ wrapStore: reads.wrap, env: { AGENT_API_KEYS: A, WEBHOOK_POLL_MS: "60000" } });
    const session = (await server.request("POST", "/sessions", { body: {}, headers: auth })).body;
    await seedLargeRun(server.ctx.store, {
      sessionId: session.id,
      runId: RUN,
      steps: 100,
      stepBytes: 16_000,
      approvals: 30,
      inputBytes: 100_000,
    });
  }, 60_000);
  afterAll(() => server?.close());

  /** The bytes the store hands back while answering `path` (which must answer 200 with `items` items). */
  async function readFor(path: string, items: number): Promise<number> {
    reads.bytes = 0;
    reads.calls.length = 0;
    reads.counting = true;
    const answer = await server.request("GET", path, { headers: auth });
    reads.counting = false;
    expect(answer.status).toBe(200);
    expect(answer.body.items).toHaveLength(items);
    console.log(`${path}: ${Math.round(reads.bytes / 1000)} KB read (${reads.calls.join(", ")})`);
    return reads.bytes;
  }

  it("a page of 2 approvals reads 2 inputs, a page of the default 50 about 1 MB; not 3 MB each", async () => {
    expect(await readFor(`/runs/${RUN}/approvals?limit=2`, 2)).toBeLessThan(250_000);
    // 10 inputs of 100 KB fill a page of 1 MiB.
    expect(await readFor(`/runs/${RUN}/approvals`, 10)).toBeLessThan(1_100_000);
  });

  it("a page of 5 steps reads 5 traces, a page of 200 about 1 MB; not 1.6 MB each", async () => {
    expect(await readFor(`/runs/${RUN}/steps?limit=5`, 5)).toBeLessThan(100_000);
    expect(await readFor(`/runs/${RUN}/steps?limit=200`, 62)).toBeLessThan(1_100_000);
  });
});
