/**
 * A run killed during its first model request and ended by a restart with ON_RESTART=abort:
 * the request was made (its `turn.started` is stored), so it counts in `modelCalls` (README,
 * Events), and the stop detail places the stop in that turn, which no step completed.
 */
import { beforeEach, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { openSse } from "../helpers/sse-client.js";

const crash = crashHarness({ instanceId: "abort-before-first-turn" });

beforeEach(() => crash.prepare("sqlite"));

it("ON_RESTART=abort of a run killed during its first model request: stopped in turn 1, the request counted", async () => {
  const a = await crash.start();
  crash.upstream.enqueue({ hang: "before-headers" });
  const session = await api(a.url, "POST", "/sessions", {});
  const run = await api(a.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" });
  const watcher = await openSse(`${a.url}/runs/${run.body.id}/events`);
  await watcher.waitFor((e) => e.event === "turn.started");
  watcher.close();
  await crash.kill(a);

  const b = await crash.restart({ env: { ON_RESTART: "abort" } });
  const view = (await api(b.url, "GET", `/runs/${run.body.id}`)).body;
  expect(view.stopReason).toBe("aborted");
  expect(view.stats.modelCalls).toBe(1);
  expect(view.stats.turns).toBe(0);
  expect((await api(b.url, "GET", `/runs/${run.body.id}/steps`)).body.items).toEqual([]);
  expect(view.stopDetail).toMatch(/^stopped in turn 1: /);
});
