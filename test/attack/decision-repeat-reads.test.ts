/**
 * One key's session has a system prompt of 200 KB and its run an input of ~1 MB, with a call it
 * approved. It then sends the same decision over and over (answered as the first was: a repeat
 * is not an error), a request of a few bytes with an answer of a few hundred. Each repeat read
 * the run's whole view (its input with it) to learn whether the run had finished, and dropped
 * it; now it reads the run's status alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runAwaitingApproval, withKey } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

const A = "key-attacker-0123456789abcdef";
const auth = { authorization: `Bearer ${A}` };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a key repeating its decision on a call of its run of a 1 MB input", () => {
  it("does not read the run's view", async () => {
    const s = await startTestServer({ env: { AGENT_API_KEYS: A } });
    server = s;
    const { runId } = await runAwaitingApproval(withKey(s, A), {
      session: { system: "s".padEnd(200_000, "s") },
      input: "w".padEnd(1_000_000, "x"),
    });
    const run = { id: runId };
    s.upstream.enqueue({ text: "done" });
    const decide = () =>
      s.request("POST", `/runs/${run.id}/approvals/call_w`, { body: { decision: "approve" }, headers: auth });
    expect((await decide()).status).toBe(200);
    await finishedRun({ request: (method, path) => s.request(method, path, { headers: auth }) }, run.id);
    // The run's row is read whole by `runs.get` (its view): counted.
    const runs = s.ctx.store.runs;
    const get = runs.get.bind(runs);
    const wholeReads: string[] = [];
    runs.get = (id) => {
      wholeReads.push(id);
      return get(id);
    };
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < 50; i++) {
      const answer = await decide();
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ toolCallId: "call_w", status: "approved" });
    }
    const cpu = process.cpuUsage(cpu0);
    // This process is the server and its client.
    const cpuMs = (cpu.user + cpu.system) / 1000;
    console.log(`50 repeated decisions on a run of a 1 MB input: ${Math.round(cpuMs)} ms of CPU`);
    expect(wholeReads).toEqual([]);
  }, 30_000);
});
