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
  it("a finished run's plan is read from its messages once, then kept; an unfinished run's at every listing", async () => {
    const reads: string[] = [];
    server = await startTestServer({
      backend,
      wrapStore: (store) =>
        aroundStore(store, "messages", (name, args, call) => {
          if (name === "ofRun") reads.push(args[1] as string);
          return call();
        }),
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
      reads.length = 0;
      const items = (await server.request("GET", `/sessions/${session.id}/runs`)).body.items as {
        id: string;
        plan: { steps: { title: string }[] } | null;
      }[];
      return {
        plans: Object.fromEntries(items.map((r) => [r.id, r.plan?.steps.map((s) => s.title)])),
        reads: [...reads],
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
    expect(first.reads.sort()).toEqual([...finished, running.id].sort());
    expect(second.reads).toEqual([running.id]);

    release();
    await finishedRun(server, running.id);
    const third = await list();
    expect(third.plans).toEqual(expected);
    expect(third.reads).toEqual([running.id]);
    expect((await list()).reads).toEqual([]);
  });
});
