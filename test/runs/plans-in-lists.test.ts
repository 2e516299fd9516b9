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
  it("a run's plan is folded from the messages committed since it was last viewed: a finished run's, once, then kept", async () => {
    const reads: string[] = [];
    /** Each read of a run's messages: the run, and the seq it read after. */
    const readsAfter: [string, number][] = [];
    server = await startTestServer({
      backend,
      wrapStore: (store) =>
        aroundStore(store, "messages", (name, args, call) => {
          if (name === "ofRun") {
            reads.push(args[1] as string);
            readsAfter.push([args[1] as string, (args[2] as number | undefined) ?? 0]);
          }
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
    // The finished runs were viewed as they finished (their plans kept); the running one is
    // read again at each listing, from the last message seq read.
    expect(first.reads).toEqual([running.id]);
    expect(second.reads).toEqual([running.id]);
    const afterSeqs = readsAfter.filter(([id]) => id === running.id).map(([, after]) => after);
    expect(afterSeqs[0]).toBe(0);
    expect(afterSeqs.at(-1)).toBeGreaterThan(0);

    release();
    await finishedRun(server, running.id);
    // Viewed as it finished (finishedRun asks for it): its plan is kept too.
    const third = await list();
    expect(third.plans).toEqual(expected);
    expect(third.reads).toEqual([]);
  });
});
