/**
 * One key's session has a system prompt of 200 KB and a run waiting for an approval. The key then
 * asks about the session over and over: a page of its messages, a page of its runs, a resume of
 * its chat stream, each a request of a few bytes answered with a few KB. Each read the session's
 * whole row, its system prompt with it, only to learn that the session exists and whose it is;
 * now that is read alone (`sessions.access`).
 */
import { afterEach, describe, expect, it } from "vitest";
import { runAwaitingApproval, withKey } from "../helpers/awaiting-approval.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const A = "key-attacker-0123456789abcdef";
const B = "key-bystander-0123456789abcdef";
const REPEATS = 40;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key asking about its session of a 200 KB system prompt", () => {
  it("does not read the system prompt to check whose the session is", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ env: { AGENT_API_KEYS: `${A},${B}` }, wrapStore: reads.wrap });
    server = s;
    const a = withKey(s, A);
    const { sessionId, runId } = await runAwaitingApproval(a, { session: { system: "s".padEnd(200_000, "s") } });
    const paths = [
      `/sessions/${sessionId}/messages?limit=5`,
      `/sessions/${sessionId}/runs?limit=5`,
      `/sessions/${sessionId}/chat/stream`,
    ];
    // Another key is told of no such session, as before.
    for (const path of paths) expect((await withKey(s, B).request("GET", path)).status).toBe(404);

    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < REPEATS; i++) {
      for (const path of paths) expect((await a.request("GET", path)).status).toBe(200);
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const requests = REPEATS * paths.length;
    console.log(
      `${requests} requests about a session of a 200 KB system prompt: ${Math.round(cpuMs)} ms of CPU, ` +
        `${Math.round(reads.bytes / 1000)} KB read from the store`,
    );
    // A few KB each (the answers' messages, runs and events), not the 200 KB prompt.
    expect(reads.bytes).toBeLessThan(requests * 10_000);
    expect(cpuMs).toBeLessThan(1500);
    await a.request("DELETE", `/runs/${runId}`);
  }, 60_000);
});
