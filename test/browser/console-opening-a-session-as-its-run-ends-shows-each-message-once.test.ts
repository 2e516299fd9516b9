/**
 * Opening (or reloading) a session just as its active run ends and the next run goes. The
 * console reads the session (its activeRunId: run 1), then the history, replays run 1's events
 * and then follows the session's next run from its first event (README, Console). Before, it
 * showed the history without run 1's messages only: when run 1 ended and the queued run 2 ran
 * between those two reads, the history it read already held run 2's messages: they were shown
 * from the history, first (above run 1's, replayed after them), and then a second time when
 * run 2 was followed. The user saw the conversation out of order and run 2's question and
 * answer twice, though the session holds each once.
 *
 * Now the history is cut at run 1's first message (the rest comes from the events): each
 * committed message shown once, in the session's order.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";
import { launchChromium, newPage } from "./browser.js";

let browser: Browser;
let server: TestServer;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchChromium(), startTestServer()]);
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("a session opened as its run ends and a queued run follows", () => {
  it("shows each message once, in order", async () => {
    const id = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
    const first = gate();
    server.upstream.enqueue({ text: ["first answer"], gate: first.wait }, { text: "second answer" });
    const r1 = await server.request("POST", `/sessions/${id}/runs`, { body: { input: "first question" } });
    expect(r1.status).toBe(201);
    const r2 = await server.request("POST", `/sessions/${id}/runs`, {
      body: { input: "second question", ifBusy: "enqueue" },
    });
    expect([r2.status, r2.body.status]).toEqual([201, "queued"]);
    const { page } = await newPage(browser);
    const historyAsked = gate();
    try {
      // The session is read with run 1 active; before its history is read, run 1 ends and run 2 runs.
      await page.route(`**/sessions/${id}/messages?*`, async (route) => {
        first.open();
        await finishedRun(server, r1.body.id);
        await finishedRun(server, r2.body.id);
        await route.continue();
        historyAsked.open();
      });
      await page.goto(`${server.url}/#${id}`);
      await historyAsked.wait;
      const expected = ["first question", "first answer", "second question", "second answer"];
      const stored = (await server.request("GET", `/sessions/${id}/messages`)).body.items;
      expect(stored.map((m: { content: string }) => m.content)).toEqual(expected);
      // Once the console has read the session again at run 1's end and followed run 2 to its end.
      await expect.poll(() => page.locator("#send").isEnabled()).toBe(true);
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      await expect.poll(() => page.locator("#history li").allTextContents()).toEqual(expected);
    } finally {
      first.open();
      await page.context().close();
    }
  });
});
