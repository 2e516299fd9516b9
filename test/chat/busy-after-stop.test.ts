/**
 * A chat message that finds the session busy with a run being cancelled starts with
 * `ifBusy: "interrupt"` (start-chat-run.ts). That interrupt cancelled whatever run was active
 * when it ran, not the run seen cancelling: when that run had ended and another message's run
 * had started in between, the late message cancelled that new run (which nobody stopped)
 * instead of being refused as busy. Now it interrupts only the run it saw cancelling.
 *
 * Two chat messages after a stop (two tabs, or a double send): X sees the stopped run
 * cancelling and starts its run once it has ended; Y saw it cancelling too, but its read comes
 * back (a slow store round trip, held here by the test) only after X's run has started. The
 * stopped run's end is held too, so that both see it cancelling whatever the machine's speed.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { gate } from "../fakes/gate.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
let watched = "";
let cancellingReads = 0;
const firstRead = gate();
const secondRead = gate();
const release = gate();
/** Holds the stored end of the watched run. */
const end = gate();

beforeAll(async () => {
  server = await startTestServer({
    wrapStore: (store: Store) => {
      const access = store.runs.access.bind(store.runs) as (...a: unknown[]) => Promise<{ status: string } | null>;
      store.runs.access = (async (runId: string, ...rest: unknown[]) => {
        const fromChatStart = new Error().stack?.includes("startChatRun") ?? false;
        const result = await access(runId, ...rest);
        if (fromChatStart && runId === watched && result?.status === "cancelling") {
          cancellingReads++;
          if (cancellingReads === 1) firstRead.open();
          if (cancellingReads === 2) {
            secondRead.open();
            await release.wait;
          }
        }
        return result;
      }) as typeof store.runs.access;
      const commitRun = store.commitRun.bind(store);
      store.commitRun = (async (runId, changes, events, fence) => {
        if (runId === watched && events.some((e) => e.type === "run.finished")) await end.wait;
        return commitRun(runId, changes, events, fence);
      }) as typeof store.commitRun;
      return store;
    },
  });
});
afterAll(async () => {
  release.open();
  end.open();
  await server?.close();
});

async function within(ms: number, condition: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const message = (text: string) =>
  JSON.stringify({ messages: [{ id: `u-${text}`, role: "user", parts: [{ type: "text", text }] }] });

it("a second message after a stop does not cancel the run the first one started: it is refused as busy", async () => {
  const hold = gate();
  try {
    const { sessionId, runId: first } = await runAwaitingApproval(server);
    server.upstream.enqueue({ text: ["X's ", "answer"], gate: hold.wait }, { text: "Y's answer" });
    watched = first;
    // stop(): the run is cancelling (its stored end held).
    const stopped = server.request("DELETE", `/runs/${first}`);

    const chatUrl = `${server.url}/sessions/${sessionId}/chat`;
    const post = (text: string) =>
      fetch(chatUrl, { method: "POST", headers: { "content-type": "application/json" }, body: message(text) });
    const x = post("X");
    await firstRead.wait;
    const y = post("Y");
    await secondRead.wait;
    // The stopped run ends; X's run starts.
    end.open();
    expect((await stopped).status).toBeLessThan(300);
    let xRun = "";
    expect(
      await within(8000, async () => {
        const active = (await server.request("GET", `/sessions/${sessionId}`)).body.activeRunId;
        if (active && active !== first) xRun = active;
        return xRun !== "";
      }),
    ).toBe(true);
    // Y's read of the stopped run's status comes back now.
    release.open();
    const yResponse = await y;
    const yBody = await yResponse.text();
    hold.open();
    await (await x).text();
    const xFinished = await server.ctx.manager.waitForFinish(xRun);
    expect({
      y: yResponse.status,
      yCode: yResponse.status === 200 ? "(stream)" : JSON.parse(yBody).error?.code,
      xRun: xFinished.stopReason,
      xStop: xFinished.stopDetail,
    }).toEqual({ y: 409, yCode: "SESSION_BUSY", xRun: "complete", xStop: null });
  } finally {
    hold.open();
    release.open();
    end.open();
  }
});
