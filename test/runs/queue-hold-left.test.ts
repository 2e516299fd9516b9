/**
 * A session's queue hold left behind by an interrupting start (its release failed, or the
 * process died holding it): an enqueue on the idle session is queued behind the hold, and
 * nothing started it when the hold expired (on SQLite, where no reaper runs, it stayed queued
 * until another run of the session ended or a restart, and a restart within the hold kept it).
 */
import { afterEach, expect, it, vi } from "vitest";
import type { ControlDeps } from "../../src/runs/control.js";
import { interruptAndStart } from "../../src/runs/interrupt.js";
import { StorageError } from "../../src/store/errors.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await server?.close();
  server = undefined;
});

it("a hold a dead process left in the SQLite file is gone at the restart: an enqueue on the idle session runs at once", async () => {
  const first = await startTestServer();
  const session = (await first.request("POST", "/sessions", { body: {} })).body;
  await first.ctx.store.runs.holdQueue(session.id, 60_000);
  await first.close({ keepDir: true });
  server = await startTestServer({ dir: first.dir });
  server.upstream.fallback = () => ({ text: "ran" });
  const enqueued = await server.request("POST", `/sessions/${session.id}/runs`, {
    body: { input: "after the restart", ifBusy: "enqueue" },
  });
  expect(enqueued.status).toBe(201);
  expect(enqueued.body.status).not.toBe("queued");
  expect((await finishedRun(server, enqueued.body.id)).stopReason).toBe("complete");
});

it("an interrupting start whose hold could not be released starts the session's queue again when the hold expires", async () => {
  vi.useFakeTimers();
  const starts: number[] = [];
  const deps = {
    store: {
      runs: {
        active: async () => null,
        holdQueue: async () => {},
        releaseQueue: async () => {
          throw new StorageError("unavailable", "the release failed");
        },
      },
    },
  } as unknown as ControlDeps;
  const started = await interruptAndStart(deps, {
    sessionId: "ses_x",
    repeated: async () => null,
    start: async () => "the new run",
    startQueue: () => starts.push(Date.now()),
  });
  expect(started).toBe("the new run");
  expect(starts).toHaveLength(1);
  await vi.advanceTimersByTimeAsync(16_000);
  expect(starts).toHaveLength(2);
});
