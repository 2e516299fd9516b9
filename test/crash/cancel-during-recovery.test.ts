/**
 * A cancel (DELETE /runs/{id}, or a start with ifBusy "interrupt") sent while the restart's
 * recovery had claimed the run but not yet resumed it (the server listens before it recovers): it was answered `cancelling` at once, and the run,
 * resumed from the record read at its claim, went on waiting for its approval, over a SQLite
 * file for good. The cancel now waits for the recovery, as a decision does, and stops the run. (An interrupt
 * found in kill-anywhere postgres seed 4006: its start waited 9.8 s, for the safety poll.)
 */
import { afterEach, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { freePort } from "../helpers/child-server.js";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0).reverse()) await server.close();
});

it.each([
  ["DELETE /runs/{id}", "DELETE"],
  ['a start with ifBusy "interrupt"', "interrupt"],
])(
  "a cancel (%s) sent between the recovery's claim of a run and its resumption ends the run aborted",
  async (_, how) => {
    const upstream = await startFakeUpstream();
    upstream.fallback = () => ({ text: "done" });
    const a = await startTestServer({ upstream });
    const { sessionId, runId } = await runAwaitingApproval(a, { input: "first" });
    // Left live, as a lost process leaves it.
    await a.close({ keepDir: true, resume: true });

    const port = await freePort();
    let cancel: Promise<{ status: number; body: { status: string } }> | null = null;
    // As the recovery reads the claimed run's messages, just before it resumes it, a client
    // cancels the run.
    const cancelFirst = (store: Store): Store =>
      aroundStore(store, "messages", (name, _args, call) => {
        if (name !== "anyOfRun" || cancel) return call();
        const request =
          how === "DELETE"
            ? fetch(`http://127.0.0.1:${port}/runs/${runId}`, { method: "DELETE" })
            : fetch(`http://127.0.0.1:${port}/sessions/${sessionId}/runs`, {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ input: "instead", ifBusy: "interrupt" }),
              });
        cancel = request.then(async (res) => ({
          status: res.status,
          body: await res.json(),
        }));
        // Answered at once where the cancel does not wait for the recovery (or given a second).
        return Promise.race([cancel, new Promise((resolve) => setTimeout(resolve, 1000))]).then(call);
      });
    const b = await startTestServer({ dir: a.dir, upstream, port, wrapStore: cancelFirst });
    servers.push(b);
    const answered = await (cancel as unknown as Promise<{ status: number; body: { status: string } }>);
    // The DELETE is answered with the run cancelling; the interrupting start with its new run.
    expect(answered.status).toBe(how === "DELETE" ? 202 : 201);
    if (how === "DELETE") expect(answered.body.status).toBe("cancelling");

    const ended = await until(
      async () => (await b.request("GET", `/runs/${runId}`)).body,
      (r) => r.status === "finished",
      "the cancelled run to end",
    );
    expect(ended.stopReason).toBe("aborted");
    const results = (await b.request("GET", `/sessions/${sessionId}/messages`)).body.items.filter(
      (m: { role: string }) => m.role === "tool",
    );
    expect(results.map((m: { metadata: { errorCode: string } }) => m.metadata.errorCode)).toEqual(["ABORTED"]);
    await upstream.close();
  },
);
