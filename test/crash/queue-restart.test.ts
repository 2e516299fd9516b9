import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { openSse } from "../helpers/sse-client.js";
import { until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "queue-test" });

describe.each(["sqlite", "postgres"] as const)("queued runs and steered input across kill -9 (%s)", (backend) => {
  beforeEach(() => crash.prepare(backend, "queue-restart-"));

  it("the queue and a steer's input survive a crash: the run resumes with the input, then the queue runs in order", async () => {
    const server = await crash.start();
    const before = crash.upstream.requests.length;
    crash.upstream.enqueue({ hang: "before-headers" });
    const session = (await api(server.url, "POST", "/sessions", {})).body.id as string;
    const first = await api(server.url, "POST", `/sessions/${session}/runs`, { input: "first" });
    expect(first.status).toBe(201);
    await until(
      async () => crash.upstream.requests.length,
      (n) => n === before + 1,
      "the first model request",
    );
    const queued = [];
    for (const input of ["second", "third"]) {
      const res = await api(server.url, "POST", `/sessions/${session}/runs`, { input, ifBusy: "enqueue" });
      expect(res.body.status).toBe("queued");
      queued.push(res.body.id as string);
    }
    // The steer waits for the run to take its input; the crash comes first.
    const steering = api(server.url, "POST", `/sessions/${session}/runs`, { input: "steered", ifBusy: "steer" }).catch(
      (err: unknown) => err,
    );
    // PostgreSQL can be watched meanwhile; the SQLite file is locked by its server until it dies.
    if (crash.database) {
      const watch = await crash.openStore();
      await until(
        () => watch.inputs.pending(first.body.id),
        (p) => p.length === 1,
        "the steered input to be stored",
      );
      await watch.close();
    } else {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    server.process.kill("SIGKILL");
    expect(await server.exited).toBe("SIGKILL");
    expect(await steering).toBeInstanceOf(Error);
    const store = await crash.openStore();
    try {
      expect((await store.inputs.pending(first.body.id)).map((i) => i.content)).toEqual(["steered"]);
      expect(await store.runs.queuedIds(session)).toEqual(queued);
    } finally {
      await store.close();
    }

    crash.upstream.enqueue({ text: "first, steered" }, { text: "second done" }, { text: "third done" });
    const again = await crash.restart();
    const last = await openSse(`${again.url}/runs/${queued[1]}/events`);
    const events = await last.ended;
    expect(events.map((e) => e.event).slice(0, 2)).toEqual(["run.queued", "run.started"]);
    expect(events.at(-1)?.json.run.stopReason).toBe("complete");
    for (const id of [first.body.id, ...queued]) {
      expect((await api(again.url, "GET", `/runs/${id}`)).body).toMatchObject({
        status: "finished",
        stopReason: "complete",
      });
    }
    // After the restart: the resumed run with the steered input last, then the queue, oldest first.
    const asked = crash.upstream.requests.slice(before + 1).map((r) => {
      const users = r.body.messages.filter((m: { role: string }) => m.role === "user");
      return users.map((m: { content: string }) => m.content).join(" + ");
    });
    expect(asked).toEqual(["first + steered", "first + steered + second", "first + steered + second + third"]);
    const history = (await api(again.url, "GET", `/sessions/${session}/messages`)).body.items;
    expect(history.map((m: { role: string; runId: string }) => [m.role, m.runId])).toEqual([
      ["user", first.body.id],
      ["user", first.body.id],
      ["assistant", first.body.id],
      ["user", queued[0]],
      ["assistant", queued[0]],
      ["user", queued[1]],
      ["assistant", queued[1]],
    ]);
  });
});
