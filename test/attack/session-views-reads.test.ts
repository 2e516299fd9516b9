/**
 * One key starts a run of a ~1 MB input in each of 8 sessions, each left waiting for an
 * approval, then lists its sessions over and over (`GET /sessions`, a request of a few bytes,
 * an answer of a few KB). A session's view names its active run, and each view read that
 * run's whole row, input and all, for its id: 8 MB per listing. Now the id alone is read.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ReadBytes } from "../helpers/read-bytes.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };
const SESSIONS = 8;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key listing its sessions, each with an active run of a 1 MB input", () => {
  it("reads none of the runs' inputs", async () => {
    const reads = new ReadBytes();
    const s = await startTestServer({ wrapStore: reads.wrap, env: { AGENT_API_KEYS: A } });
    server = s;
    const runs: string[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      s.upstream.enqueue({
        toolCalls: [{ id: `call_${i}`, name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }],
      });
      const session = (await s.request("POST", "/sessions", { body: {}, headers: auth })).body;
      const input = `${i}`.padEnd(1_000_000, "x");
      const run = (await s.request("POST", `/sessions/${session.id}/runs`, { body: { input }, headers: auth })).body;
      await until(
        async () => (await s.request("GET", `/runs/${run.id}/approvals`, { headers: auth })).body.items.length,
        (n) => n === 1,
        "the approval request",
      );
      runs.push(run.id);
    }
    reads.counting = true;
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < 30; i++) {
      const answer = await s.request("GET", `/sessions?limit=${SESSIONS}`, { headers: auth });
      expect(answer.status).toBe(200);
      expect(answer.body.items.map((v: { activeRunId: string }) => v.activeRunId).sort()).toEqual([...runs].sort());
    }
    const cpu = process.cpuUsage(cpu0);
    reads.counting = false;
    console.log(`${Math.round(reads.bytes / 1000)} KB read from the store`);
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(`30 listings of 8 sessions with active runs of 1 MB: ${Math.round(cpuMs)} ms of CPU`);
    // Each active run's id and key, not its 1 MB input (240 MB read before).
    expect(reads.bytes).toBeLessThan(30 * 8 * 5_000);
    for (const id of runs) await s.request("DELETE", `/runs/${id}`, { headers: auth });
  }, 60_000);
});
