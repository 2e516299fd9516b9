/**
 * A run resumed with every call answered is checked by the loop guard before its next model
 * request (it was skipped: the case below).
 *
 * README ("Stop reasons"): `loop_detected` is "checked after a turn's results are committed,
 * before the next model request", and "Budgets and the loop guard count the whole run: a run
 * resumed after a restart keeps counting its ... repeats from before".
 *
 * Seen from outside: a run whose model makes the same failing `shell` call three times in a row
 * (loopRepeatLimit 3) is shut down with ON_RESTART=resume while the third call runs. The
 * shutdown lets that tool finish and commits its real result (the third identical
 * SHELL_FAILED), then leaves the run for the restart before the guard runs. The restarted server
 * resumes the run: no call is pending, so runAgent goes straight to the next model request,
 * and the guard that should have stopped the run is never consulted for those three calls. The
 * model is asked for a fourth turn (and the run ends `complete` here) although the run's last
 * three calls were one call failing the same way.
 *
 * Expected: the resumed run stops `loop_detected` before asking the model again, as it would
 * have without the restart.
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { openSse } from "../helpers/sse-client.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("a run resumed after its third identical failing call stops loop_detected instead of asking the model again", async () => {
  const gates = tempDir("loop-resume-");
  cleanups.push(() => gates.cleanup());
  const hold = join(gates.path, "hold");
  // The same command every time: it fails (exit 3) at once, or, while `hold` exists, once it is gone.
  const command = `while [ -f '${hold}' ]; do sleep 0.05; done; exit 3`;
  const shellCall = (id: string) => ({ id, name: "shell", arguments: JSON.stringify({ command }) });

  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const env = { SHELL_SANDBOX: "off", ON_RESTART: "resume" };
  const first: TestServer = await startTestServer({ upstream, env });
  let firstClosed = false;
  cleanups.push(() => (firstClosed ? undefined : first.close()));

  let releaseThird!: () => void;
  const third = new Promise<void>((resolve) => {
    releaseThird = resolve;
  });
  upstream.enqueue(
    { toolCalls: [shellCall("call_1")] },
    { toolCalls: [shellCall("call_2")] },
    { toolCalls: [shellCall("call_3")], gate: third },
  );
  const session = (await first.request("POST", "/sessions", { body: { approval: { tools: { shell: "allow" } } } }))
    .body;
  const run = (
    await first.request("POST", `/sessions/${session.id}/runs`, { body: { input: "go", loopRepeatLimit: 3 } })
  ).body;
  expect(run.loopRepeatLimit).toBe(3);

  // Turn 3 is asked for: the first two identical calls have failed (SHELL_FAILED) and are committed.
  await until(
    () => upstream.requests.length,
    (n) => n === 3,
    "the third model request",
  );
  // The third call will block until `hold` is removed.
  writeFileSync(hold, "");
  const watcher = await openSse(`${first.url}/runs/${run.id}/events`);
  cleanups.push(() => watcher.close());
  releaseThird();
  await watcher.waitFor((e) => e.event === "tool.started" && e.json.toolCallId === "call_3");

  // Shut down with resume while call_3 runs (the run is suspended at once), then let the tool finish:
  // its real result is still committed, and the run is left for the restart.
  const closing = first.close({ keepDir: true, resume: true });
  rmSync(hold);
  await closing;
  firstClosed = true;
  cleanups.push(() => rmSync(first.dir, { recursive: true, force: true }));
  expect(existsSync(hold)).toBe(false);

  // Whatever the model would say next (it should not be asked).
  upstream.enqueue({ text: "I will stop now." });
  const second = await startTestServer({ upstream, env, dir: first.dir });
  cleanups.push(() => second.close());

  const messages = (await second.request("GET", `/sessions/${session.id}/messages`)).body.items as {
    role: string;
    metadata?: { errorCode?: string | null };
  }[];
  // The three identical calls, each failed the same way, all committed before the restart.
  expect(messages.filter((m) => m.role === "tool").map((m) => m.metadata?.errorCode)).toEqual([
    "SHELL_FAILED",
    "SHELL_FAILED",
    "SHELL_FAILED",
  ]);

  const finished = await finishedRun(second, run.id);
  expect({ stopReason: finished.stopReason, modelRequests: upstream.requests.length }).toEqual({
    stopReason: "loop_detected",
    modelRequests: 3,
  });
  expect(finished.stopDetail).toMatch(/failed with SHELL_FAILED 3 times in a row/);
});
