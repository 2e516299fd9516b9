/**
 * Switching sessions in the console while the one clicked before is still loading, in real
 * Chromium, with an API key (its watcher waits for a stream token) and without (its history
 * is on its way): the session clicked last is shown, and nothing of the other comes into it.
 * The address and the session shown stay one (Back, a pasted link); a run that follows the
 * watched one in its session (queued, or interrupting it) is followed; the session list shows
 * its latest read.
 */
import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { launchChromium, newPage } from "./browser.js";

const KEY = "console-key-0123456789";
let browser: Browser;
let keyed: TestServer;
let open: TestServer;

beforeAll(async () => {
  [browser, keyed, open] = await Promise.all([
    launchChromium(),
    startTestServer({ env: { AGENT_API_KEYS: KEY } }),
    startTestServer(),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await keyed?.close();
  await open?.close();
});

/**
 * Session A with a run streaming text (held open by `hold`) and an idle session B, on `server`;
 * the console on it, signed in when `key`, its requests recorded.
 */
async function twoSessions(server: TestServer, key: string | null, hold: ReturnType<typeof gate>) {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  const A = (await server.request("POST", "/sessions", { body: {}, headers })).body.id as string;
  const B = (await server.request("POST", "/sessions", { body: {}, headers })).body.id as string;
  server.upstream.enqueue({ text: ["A streaming text "], gate: hold.wait });
  const run = await server.request("POST", `/sessions/${A}/runs`, { body: { input: "question for A" }, headers });
  expect(run.status).toBe(201);
  const { page, problems } = await newPage(browser);
  const requests: string[] = [];
  page.on("request", (r) => requests.push(new URL(r.url()).pathname));
  await page.goto(server.url);
  if (key) {
    await page.locator("#key-form").waitFor();
    await page.fill("#key", key);
    await page.click("#key-form button[type=submit]");
  }
  await page.locator(`[data-session="${B}"]`).waitFor();
  return { page, problems, requests, A, B, runA: run.body.id as string };
}

/** What the chat shows, as text. */
const shown = (page: Page) => page.locator("#chat").textContent();

describe("switching sessions while one loads", () => {
  it("with a key: a watcher stopped while its stream token was on its way opens nothing; B shows nothing of A", async () => {
    const hold = gate();
    const token = gate();
    const { page, requests, A, B, runA } = await twoSessions(keyed, KEY, hold);
    try {
      await page.route("**/stream-token", async (route) => {
        await token.wait;
        await route.continue();
      });
      await page.locator(`[data-session="${A}"]`).click();
      await page.locator("#session-title", { hasText: A }).waitFor();
      await page.locator(`[data-session="${B}"]`).click();
      await page.locator("#session-title", { hasText: B }).waitFor();
      // A's token arrives after B is shown.
      const tokenDone = page.waitForEvent("requestfinished", (r) => r.url().endsWith("/stream-token"));
      token.open();
      await tokenDone;
      await page.waitForTimeout(300);
      expect(requests.filter((path) => path === `/runs/${runA}/events`)).toEqual([]);
      expect(await shown(page)).not.toMatch(/A streaming|question for A/);
      expect(await page.locator("#send").isDisabled()).toBe(false);
    } finally {
      hold.open();
      token.open();
      await page.context().close();
    }
  });

  it("without a key: A's history arriving after B is shown is dropped, and A's run is not watched", async () => {
    const hold = gate();
    const history = gate();
    const { page, requests, A, B, runA } = await twoSessions(open, null, hold);
    try {
      await page.route(`**/sessions/${A}/messages?*`, async (route) => {
        await history.wait;
        await route.continue();
      });
      await page.locator(`[data-session="${A}"]`).click();
      await page.locator(`[data-session="${B}"]`).click();
      await page.locator("#session-title", { hasText: B }).waitFor();
      const historyDone = page.waitForEvent("requestfinished", (r) => r.url().includes(`/sessions/${A}/messages`));
      history.open();
      await historyDone;
      await page.waitForTimeout(300);
      expect(await page.locator("#session-title").textContent()).toBe(B);
      expect(new URL(page.url()).hash).toBe(`#${B}`);
      expect(requests.filter((path) => path === `/runs/${runA}/events`)).toEqual([]);
      expect(await shown(page)).not.toMatch(/A streaming|question for A/);
      expect(await page.locator("#send").isDisabled()).toBe(false);
    } finally {
      hold.open();
      history.open();
      await page.context().close();
    }
  });
});

/**
 * Before, the hash was read only when the console started: Back (or a session link pasted into
 * the tab) changed the address and left the other session shown. Now a change of the hash to
 * another session's id opens that session.
 */
describe("the address and the session shown", () => {
  it("Back to the previous session's address shows that session, not the one before with its address", async () => {
    open.upstream.enqueue({ text: "answer in A" });
    const A = (await open.request("POST", "/sessions", { body: {} })).body.id as string;
    await open.request("POST", `/sessions/${A}/runs?wait=true`, { body: { input: "question in A" } });
    const B = (await open.request("POST", "/sessions", { body: {} })).body.id as string;
    const { page } = await newPage(browser);
    try {
      await page.goto(`${open.url}/#${A}`);
      await page.locator("#history li", { hasText: "answer in A" }).waitFor();
      await page.locator(`[data-session="${B}"]`).click();
      await page.locator("#session-title", { hasText: B }).waitFor();
      expect(new URL(page.url()).hash).toBe(`#${B}`);
      await page.goBack();
      expect(new URL(page.url()).hash).toBe(`#${A}`);
      await expect
        .poll(async () => ({
          title: await page.locator("#session-title").textContent(),
          history: await page.locator("#history li").allTextContents(),
        }))
        .toEqual({ title: A, history: ["question in A", "answer in A"] });
    } finally {
      await page.context().close();
    }
  });
});

/**
 * Before, the end of the watched run re-enabled Send and ended the watch, though another run
 * (queued behind it, or interrupting it) was the session's active run now: its messages never
 * showed. Now the session is read again at the watched run's end and its next run followed.
 */
/** How long the page may take to show what follows a run's end (a loaded machine: a browser, servers, tests). */
const WAIT = { timeout: 10_000 };

describe("a run that follows the watched one in its session", () => {
  it("a queued run is followed once the watched run ends: its messages show, Send stays off while it runs", async () => {
    const id = (await open.request("POST", "/sessions", { body: {} })).body.id as string;
    const first = gate();
    const second = gate();
    open.upstream.enqueue({ text: ["first answer"], gate: first.wait }, { text: ["second answer"], gate: second.wait });
    const r1 = await open.request("POST", `/sessions/${id}/runs`, { body: { input: "first question" } });
    expect(r1.status).toBe(201);
    const r2 = await open.request("POST", `/sessions/${id}/runs`, {
      body: { input: "second question", ifBusy: "enqueue" },
    });
    expect([r2.status, r2.body.status]).toEqual([201, "queued"]);
    const { page } = await newPage(browser);
    try {
      await page.goto(`${open.url}/#${id}`);
      await page.locator("#live", { hasText: "first answer" }).waitFor();
      first.open();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      // The queued run is the session's active run now, held before its answer.
      await expect
        .poll(async () => (await open.request("GET", `/sessions/${id}`)).body.activeRunId, WAIT)
        .toBe(r2.body.id);
      await expect
        .poll(
          async () => ({
            sendDisabled: await page.locator("#send").isDisabled(),
            history: await page.locator("#history li").allTextContents(),
          }),
          WAIT,
        )
        .toEqual({ sendDisabled: true, history: ["first question", "first answer", "second question"] });
      second.open();
      await expect
        .poll(
          async () => ({
            sendDisabled: await page.locator("#send").isDisabled(),
            history: await page.locator("#history li").allTextContents(),
          }),
          WAIT,
        )
        .toEqual({
          sendDisabled: false,
          history: ["first question", "first answer", "second question", "second answer"],
        });
    } finally {
      first.open();
      second.open();
      await page.context().close();
    }
  });

  it("a run that interrupts the watched one (ifBusy: interrupt, from another client) is followed: its answer shows", async () => {
    const id = (await open.request("POST", "/sessions", { body: {} })).body.id as string;
    const held = gate();
    open.upstream.enqueue({ text: ["interrupted answer"], gate: held.wait }, { text: ["the new answer"] });
    const r1 = await open.request("POST", `/sessions/${id}/runs`, { body: { input: "old question" } });
    expect(r1.status).toBe(201);
    const { page } = await newPage(browser);
    try {
      await page.goto(`${open.url}/#${id}`);
      await page.locator("#live", { hasText: "interrupted answer" }).waitFor();
      const r2 = await open.request("POST", `/sessions/${id}/runs`, {
        body: { input: "new question", ifBusy: "interrupt" },
      });
      expect(r2.status).toBe(201);
      await expect
        .poll(() => page.locator("#history li").allTextContents(), WAIT)
        .toEqual(["old question", "new question", "the new answer"]);
      // Once that run's end is shown and the session read again.
      await expect.poll(() => page.locator("#send").isDisabled(), WAIT).toBe(false);
    } finally {
      held.open();
      await page.context().close();
    }
  });
});

/**
 * Before, every read of the session list drew what it got: a read begun while a run was active,
 * answered after the read made at the run's end, drew the session as running again. Now only the
 * latest read draws the list.
 */
describe("the session list", () => {
  it("an older read of the list answered late does not draw the finished run's session as running", async () => {
    const id = (await open.request("POST", "/sessions", { body: {} })).body.id as string;
    const hold = gate();
    open.upstream.enqueue({ text: ["streaming"], gate: hold.wait });
    const run = await open.request("POST", `/sessions/${id}/runs`, { body: { input: "q" } });
    expect(run.status).toBe(201);
    const { page } = await newPage(browser);
    const laterDone = gate();
    const allDone = gate();
    let reads = 0;
    let finished = 0;
    try {
      // Read 1: at the start; read 2: once the session is shown (its run active), answered only
      // after read 3 (at the run's end) was.
      await page.route("**/sessions?*", async (route: Route) => {
        const n = ++reads;
        if (n !== 2) return route.continue();
        const response = await route.fetch();
        await laterDone.wait;
        await route.fulfill({ response });
      });
      page.on("requestfinished", (request) => {
        if (!/\/sessions\?/.test(request.url())) return;
        finished++;
        if (finished === 2) laterDone.open();
        if (finished === 3) allDone.open();
      });
      await page.goto(`${open.url}/#${id}`);
      await page.locator("#live", { hasText: "streaming" }).waitFor();
      await expect.poll(() => reads).toBe(2);
      hold.open();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      await allDone.wait;
      // Time for the page to draw read 2's answer if it would (a draw not yet made could only
      // let this pass on the old code, never fail it on the new).
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 100)));
      const item = page.locator(`[data-session="${id}"]`);
      expect({ reads, text: await item.textContent() }).toEqual({
        reads: 3,
        text: expect.not.stringContaining("running"),
      });
    } finally {
      hold.open();
      laterDone.open();
      await page.context().close();
    }
  });
});
