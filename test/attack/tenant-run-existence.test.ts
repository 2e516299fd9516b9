/**
 * Key B asking for a run of key A's, as an attacker holding one of A's run ids (they travel: a
 * stream token's `eventsUrl` handed to a browser, a log line, a shared receiver) would, to
 * learn whether it exists. The answer is the 404 a run that does not exist gets, and it must
 * take no longer either: before, the server built the run's view first, which for a planning
 * run reads its plan (then all its messages: 75 ms against 2 ms for a long run), and only then
 * found that B does not own it. Counted here as the reads of A's messages and plan that B's
 * requests cause: none.
 */
import { afterEach, describe, expect, it } from "vitest";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY_A = "key-a-0123456789abcdef";
const KEY_B = "key-b-0123456789abcdef";
const as = (key: string) => ({ authorization: `Bearer ${key}` });

let server: TestServer;
afterEach(async () => {
  await server.close();
});

describe.each(["sqlite", "postgres"] as const)("another key's run, on %s", (backend) => {
  it("is answered 404 as a missing run is, without reading anything of it first", async () => {
    const runReads: string[] = [];
    server = await startTestServer({
      backend,
      env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}` },
      wrapStore: (store) =>
        aroundStore(
          aroundStore(store, "messages", (name, _args, call) => {
            runReads.push(name);
            return call();
          }),
          "events",
          (name, _args, call) => {
            if (name === "lastPlan") runReads.push(name);
            return call();
          },
        ),
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    server.upstream.enqueue(
      {
        toolCalls: [{ id: "call_plan", name: "create_plan", arguments: JSON.stringify({ steps: [{ title: "one" }] }) }],
      },
      { text: "done", gate },
    );
    const session = (await server.request("POST", "/sessions", { body: { planning: true }, headers: as(KEY_A) })).body;
    const run = (
      await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "plan" }, headers: as(KEY_A) })
    ).body;
    // The run has its plan and waits for its answer: each view of it reads its plan.
    await until(
      () => server.upstream.requests.length,
      (n) => n === 2,
      "the run's answer to be asked for",
    );
    // A sees its run, with its plan (read from its last plan event).
    runReads.length = 0;
    const own = await server.request("GET", `/runs/${run.id}`, { headers: as(KEY_A) });
    expect(own.status).toBe(200);
    expect(own.body.plan).toMatchObject({ steps: [{ title: "one" }] });
    expect(runReads.length).toBeGreaterThan(0);

    const missing = `${run.id.slice(0, -4)}zzzz`;
    for (const path of ["", "/events", "/steps", "/webhooks", "/approvals"]) {
      for (const id of [run.id, missing]) {
        runReads.length = 0;
        const answer = await server.request("GET", `/runs/${id}${path}`, { headers: as(KEY_B) });
        expect([path, answer.status, answer.body]).toEqual([
          path,
          404,
          { error: { code: "NOT_FOUND", message: `run ${id} not found`, details: { run: id } } },
        ]);
        expect([path, id, runReads]).toEqual([path, id, []]);
      }
    }
    release();
    await until(
      async () => (await server.request("GET", `/runs/${run.id}`, { headers: as(KEY_A) })).body,
      (view) => view.status === "finished",
      "A's run to finish",
    );
  });
});
