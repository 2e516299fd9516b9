import { afterEach, describe, expect, it } from "vitest";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server.close();
});

/** A planning run's model replies: a plan of one step named `title`, then the answer. */
const planThenAnswer = (title: string, gate?: Promise<void>) => [
  { toolCalls: [{ id: `call_${title}`, name: "create_plan", arguments: JSON.stringify({ steps: [{ title }] }) }] },
  { text: `done: ${title}`, ...(gate ? { gate } : {}) },
];

describe.each(["sqlite", "postgres"] as const)("plans in a list of runs, on %s", (backend) => {
  it("a run's plan is its last plan.updated event's, read alone: none of the runs' messages is read", async () => {
    /** Each read of a run's messages (none is expected), and each plan event read: the run and how much of it. */
    const messageReads: string[] = [];
    const planReads: [string, number][] = [];
    server = await startTestServer({
      backend,
      wrapStore: (store) =>
        aroundStore(
          aroundStore(store, "messages", (name, args, call) => {
            if (name === "ofRun") messageReads.push(args[1] as string);
            return call();
          }),
          "events",
          (name, args, call) => {
            if (name === "lastPlan") planReads.push([args[0] as string, args[1] as number]);
            return call();
          },
        ),
    });
    const session = (await server.request("POST", "/sessions", { body: { planning: true } })).body;
    const finished: string[] = [];
    for (const title of ["one", "two", "three"]) {
      server.upstream.enqueue(...planThenAnswer(title));
      const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: title } })).body;
      await finishedRun(server, run.id);
      finished.push(run.id);
    }
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    server.upstream.enqueue(...planThenAnswer("four", gate));
    const running = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "four" } })).body;
    await until(
      () => server.upstream.requests.length,
      (n) => n === 8,
      "the running run's answer to be asked for",
    );

    const list = async () => {
      messageReads.length = 0;
      planReads.length = 0;
      const items = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items as {
        id: string;
        plan: { steps: { title: string }[] } | null;
      }[];
      return {
        plans: Object.fromEntries(items.map((r) => [r.id, r.plan?.steps.map((s) => s.title)])),
        messageReads: [...messageReads],
        // Each run's plan event is sized (nothing read), then read whole.
        planReads: planReads.map(([id, within]) => `${id} ${within === 0 ? "size" : "whole"}`).sort(),
      };
    };
    const first = await list();
    const second = await list();
    const expected = {
      [finished[0] as string]: ["one"],
      [finished[1] as string]: ["two"],
      [finished[2] as string]: ["three"],
      [running.id]: ["four"],
    };
    expect(first.plans).toEqual(expected);
    expect(second.plans).toEqual(expected);
    // A finished run's plan event: sized, then read. The running one is also viewed as GET /runs/{id} shows it.
    const eachFinished = finished.flatMap((id) => [`${id} size`, `${id} whole`]).sort();
    for (const listed of [first, second]) {
      expect(listed.messageReads).toEqual([]);
      expect(listed.planReads.filter((read) => !read.startsWith(running.id))).toEqual(eachFinished);
      expect(listed.planReads).toContain(`${running.id} whole`);
    }

    release();
    await finishedRun(server, running.id);
    const third = await list();
    expect(third.plans).toEqual(expected);
    expect(third.messageReads).toEqual([]);
  });
});
