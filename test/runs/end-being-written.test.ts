/**
 * GET /runs/{id} (RunManager.get) while a run's end is being written: a client polling for
 * `finished` then reads the session's messages, so the run must not read as finished before
 * its final reply can be read with it. Over PostgreSQL under load the cluster takeover test
 * once saw the run finished, then the messages without the reply.
 */
import pino from "pino";
import { afterEach, expect, it } from "vitest";
import { newId } from "../../src/ids.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunManager } from "../../src/runs/run-manager.js";
import { ScriptedModel } from "../fakes/scripted-model.js";
import { faultySqlite } from "../helpers/faulty-sqlite.js";
import { seedSession } from "../helpers/seed.js";
import { until } from "../helpers/until.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

it("a run whose final reply and end are being written reads as running until both are stored, then finished with its reply readable", async () => {
  const { store, faulty } = faultySqlite("end-written-", cleanups);
  const manager = new RunManager({
    store,
    hub: new EventHub(),
    model: new ScriptedModel([{ text: "the answer" }]),
    toolsFor: () => [],
    maxConcurrentRuns: 4,
    approvalTimeoutMs: 60_000,
    logger: pino({ level: "silent" }),
  });
  cleanups.unshift(() => manager.shutdown({ graceMs: 1000 }));
  const session = await seedSession(store, { id: newId("ses") });
  const release = faulty.stallWrites("finish");
  const { run } = await manager.start({ session, input: "go", maxTurns: 5 });
  await until(
    () => faulty.commits.some((c) => c.changes.some((change) => change.kind === "finish")),
    (seen) => seen,
    "the end's write",
  );
  const whileWritten = await manager.get(run.id);
  const messagesThen = (await store.messages.history(session.id, 0)).map((m) => m.role);
  expect(whileWritten?.status).not.toBe("finished");
  expect(messagesThen).toEqual(["user"]);
  release();
  const finished = await manager.waitForFinish(run.id);
  expect(finished).toMatchObject({ status: "finished", stopReason: "complete" });
  expect((await manager.get(run.id))?.status).toBe("finished");
  const messages = await store.messages.history(session.id, 0);
  expect(messages.at(-1)).toMatchObject({ role: "assistant", content: "the answer" });
});
