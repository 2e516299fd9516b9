/**
 * One key gives its session a system prompt of 200 KB (the most) and its run an input of ~1 MB, then asks
 * about the run over and over with requests that need no view of it (its pending approvals,
 * its steps, a stream token). Each such request read the run's whole row and its session's
 * (1.2 MB) to learn whose the run is. Now it reads the run's session, status and owner alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runAwaitingApproval, withKey } from "../helpers/awaiting-approval.js";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key asking about its own run of a 1 MB input in a session of a 200 KB system prompt", () => {
  it("reads neither to learn whose the run is", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ wrapStore: reads.wrap, env: { AGENT_API_KEYS: A } });
    server = s;
    const { runId } = await runAwaitingApproval(withKey(s, A), {
      session: { system: "s".padEnd(200_000, "s") },
      input: "w".padEnd(1_000_000, "x"),
    });
    const run = { id: runId };
    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < 50; i++) {
      expect((await s.request("GET", `/runs/${run.id}/approvals`, { headers: auth })).status).toBe(200);
      expect((await s.request("GET", `/runs/${run.id}/steps`, { headers: auth })).status).toBe(200);
      expect((await s.request("POST", `/runs/${run.id}/stream-token`, { headers: auth })).status).toBe(200);
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    console.log(`${Math.round(reads.bytes / 1000)} KB read from the store`);
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(`150 requests about a run of 1.2 MB: ${Math.round(cpuMs)} ms of CPU`);
    // Whose the run is, not its 1 MB input nor the 200 KB system prompt (180 MB read before).
    expect(reads.bytes).toBeLessThan(150 * 5_000);
    await s.request("DELETE", `/runs/${run.id}`, { headers: auth });
  }, 30_000);
});
