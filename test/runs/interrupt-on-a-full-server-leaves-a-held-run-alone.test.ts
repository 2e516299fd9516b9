/**
 * README (Busy sessions): `interrupt` cancels the active run "and once its end is stored the new
 * run starts"; MAX_CONCURRENT_RUNS: a run over it is refused with 429. Over SQLite a restart
 * resumes left runs only within MAX_CONCURRENT_RUNS and holds the others `running` (their
 * sessions busy). An interrupt on the session of a held run, whose end frees no slot, could not
 * start its run: it is refused 429 before anything is cancelled, and the held run is left as it
 * was. (It used to cancel the held run, then be refused 429: the client's active run gone, its
 * new input started nothing.) Either outcome that keeps the two together is accepted: the new run
 * made in the place of the one ended, or the request refused with the active run left alone.
 */
import { afterEach, expect, it } from "vitest";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0).reverse()) await s.close().catch(() => {});
});

it("an interrupt of a run held for a slot after a restart, with no slot free, does not end it without starting its own run", async () => {
  const first = await startTestServer({ env: { MAX_CONCURRENT_RUNS: "2" } });
  servers.push(first);
  const a = await runAwaitingApproval(first, { input: "a" });
  const b = await runAwaitingApproval(first, { input: "b" });
  await first.close({ keepDir: true, resume: true });
  servers.pop();

  const second = await startTestServer({ dir: first.dir, upstream: first.upstream, env: { MAX_CONCURRENT_RUNS: "1" } });
  servers.push(second);
  // One run resumed (executed here), the other held for a slot (shown as stored, its session busy).
  await until(
    () => second.ctx.manager.liveCount,
    (n) => n === 1,
    "one run to be resumed",
  );
  const held = second.ctx.manager.executes(a.runId) ? b : a;
  expect(second.ctx.manager.executes(held.runId)).toBe(false);

  const res = await second.request("POST", `/sessions/${held.sessionId}/runs`, {
    body: { input: "instead", ifBusy: "interrupt" },
  });
  const old = (await second.request("GET", `/runs/${held.runId}`)).body;
  const runs = (await second.request("GET", `/sessions/${held.sessionId}/runs`)).body.items as { input: string }[];
  // Either the interrupt made its run (running or queued) in the place of the one it ended, or
  // it was refused and left the active run alone.
  const outcome = {
    status: res.status,
    oldEnded: old.status === "finished",
    newRunStored: runs.some((r) => r.input === "instead"),
  };
  expect([
    { status: 201, oldEnded: true, newRunStored: true },
    { status: 429, oldEnded: false, newRunStored: false },
  ]).toContainEqual(outcome);
});
