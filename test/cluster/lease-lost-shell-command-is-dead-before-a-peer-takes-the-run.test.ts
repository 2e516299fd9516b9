/**
 * README (Ownership by lease): "an instance that lost its lease (paused, partitioned, or
 * unable to renew in time) stops those runs and kills their tools' process groups, and writes
 * nothing more of them. An instance whose renewals fail or hang stops a run 0.9 of
 * RUN_LEASE_MS after its last renewal that succeeded was sent ...: a tenth of the lease before
 * the database's lease ... expires and a peer may claim it."
 *
 * The stop only *starts* the shell kill: SIGTERM, then SIGKILL 2 s later (SHELL_KILL_GRACE_MS).
 * A command that ignores SIGTERM keeps running for those 2 s, far longer than the tenth of the
 * lease the self-expiry leaves (0.1 s at RUN_LEASE_MS=1000, 3 s needs RUN_LEASE_MS >= 20000 and
 * is still not enough once the SIGKILL confirmation is counted). So a peer claims the run,
 * records the call INTERRUPTED and continues the run (the model may run the command again, in
 * the same workspace) while the first instance's command is still running and writing there.
 *
 * Expected: by the time a peer can take the run over, nothing of the command started by the
 * instance that lost the lease is running (e.g. a run stopped for its lease is killed with
 * SIGKILL at once, or the self-expiry leaves room for the kill's grace).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it, onTestFinished } from "vitest";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { isRunning } from "../tools/helpers.js";

const servers: TestServer[] = [];
const strays: number[] = [];
afterEach(async () => {
  for (const pid of strays.splice(0)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
  for (const s of servers.splice(0).reverse()) await s.close();
});

it("a shell command ignoring SIGTERM on an instance whose renewals hang is gone when a peer takes its run over", async () => {
  const database = await createTestPgDatabase();
  onTestFinished(() => database.drop());
  const env = { RUN_LEASE_MS: "1000", SHELL_SANDBOX: "off" };
  let hang = false;
  const a = await startTestServer({
    pgUrl: database.url,
    env,
    wrapStore: (store) => ({
      ...store,
      leases: {
        ...store.leases,
        // A partitioned database, for A only: its renewals (and claims) never answer.
        renew: (terms) => (hang ? new Promise<never>(() => {}) : store.leases.renew(terms)),
        claim: (query) => (hang ? new Promise<never>(() => {}) : store.leases.claim(query)),
      },
    }),
  });
  servers.push(a);
  const b = await startTestServer({ pgUrl: database.url, upstream: a.upstream, env });
  servers.push(b);

  const command = "trap '' TERM; echo $$ > shell.pid; while :; do echo beat >> beats.txt; sleep 0.05; done";
  a.upstream.enqueue(
    { toolCalls: [{ id: "call_sh", name: "shell", arguments: JSON.stringify({ command, timeoutMs: 60_000 }) }] },
    { text: "continued on B" },
  );
  const session = (await a.request("POST", "/sessions", { body: { approval: { tools: { shell: "allow" } } } })).body;
  const workspace = join(a.dir, "workspaces", session.workspace);
  await a.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go" } });
  const pid = Number(
    await until(
      () => {
        try {
          return readFileSync(join(workspace, "shell.pid"), "utf8").trim();
        } catch {
          return "";
        }
      },
      (text) => text !== "",
      "the command to start",
    ),
  );
  strays.push(pid);
  expect(isRunning(pid)).toBe(true);

  hang = true;
  // B claims the run once A's lease expires and records the call it interrupted.
  const interrupted = await until(
    async () =>
      ((await b.request("GET", `/sessions/${session.id}/messages`)).body.items as { toolCallId?: string }[]).find(
        (m) => m.toolCallId === "call_sh",
      ),
    (m) => m !== undefined,
    "B to take the run over",
  );
  const stillRunning = isRunning(pid);
  expect((interrupted as { metadata: { errorCode: string } }).metadata.errorCode).toBe("INTERRUPTED");
  // The run goes on on B; A's command must not be running alongside it.
  expect(stillRunning).toBe(false);
});
