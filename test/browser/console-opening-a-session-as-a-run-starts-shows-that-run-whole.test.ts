/**
 * Opening a session just as a run starts in it from elsewhere. The console reads the session
 * (idle), then its history. Before, a run started between those reads was shown as far as the
 * history held it, the session as idle: its answer never showed, and a run that had started
 * and ended meanwhile showed its question without its answer. Now the session is read again
 * after the history: a run active then is followed (its messages once: from its events), and a
 * history that grew meanwhile is read again.
 */
import type { Browser, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun, until } from "../helpers/until.js";
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

/**
 * A session whose first history read (the console's, once it read the session idle) is made
 * while a run started from elsewhere has stored its question; `answer` then runs the route's
 * own part of the test (continue it, or answer it later).
 */
async function openedAsARunStarts(answer: (route: Route, runId: string) => Promise<void>) {
  const id = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
  const hold = gate();
  server.upstream.enqueue({ text: ["the answer"], gate: hold.wait });
  const { page } = await newPage(browser);
  let historyReads = 0;
  await page.route(`**/sessions/${id}/messages?*`, async (route) => {
    if (++historyReads > 1) return route.continue();
    const run = await server.request("POST", `/sessions/${id}/runs`, { body: { input: "the question" } });
    expect(run.status).toBe(201);
    await until(
      async () => (await server.request("GET", `/sessions/${id}/messages`)).body.items.length,
      (count) => count === 1,
      "the run's question stored",
    );
    await answer(route, run.body.id);
  });
  await page.goto(`${server.url}/#${id}`);
  return { page, hold };
}

describe("a session opened as a run starts in it", () => {
  it("a run active once the history is read is followed: its question once, its text, then its answer", async () => {
    const { page, hold } = await openedAsARunStarts((route) => route.continue());
    try {
      await expect.poll(() => page.locator("#live").textContent()).toBe("the answer");
      expect(await page.locator("#cancel").isVisible()).toBe(true);
      hold.open();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      await expect.poll(() => page.locator("#send").isEnabled()).toBe(true);
      expect(await page.locator("#history li").allTextContents()).toEqual(["the question", "the answer"]);
    } finally {
      hold.open();
      await page.context().close();
    }
  });

  it("a run that started and ended while the history was read shows whole", async () => {
    let historySent = false;
    const { page, hold } = await openedAsARunStarts(async (route, runId) => {
      // The history is read with the run's question only; the run ends before the console has it.
      const response = await route.fetch();
      hold.open();
      await finishedRun(server, runId);
      await route.fulfill({ response });
      historySent = true;
    });
    try {
      await expect.poll(() => historySent).toBe(true);
      await expect.poll(() => page.locator("#history li").allTextContents()).toEqual(["the question", "the answer"]);
      expect(await page.locator("#send").isEnabled()).toBe(true);
    } finally {
      hold.open();
      await page.context().close();
    }
  });
});
