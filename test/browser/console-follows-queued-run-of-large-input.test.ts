/**
 * The console follows the run that comes after the watched one (README, Console: "when it ends
 * the session's next run, if one is active"), found in GET /sessions/{id}/runs. A page of that
 * list holds at most 1 MiB of JSON and a run carries its input, so two runs whose inputs are
 * large (a pasted log, within BODY_LIMIT_BYTES) do not share a page: the console reads page
 * after page until it finds the watched run.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
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

const WAIT = { timeout: 10_000 };
/** An input well within the default BODY_LIMIT_BYTES (1 MiB), but two of them pass a page's 1 MiB. */
const big = (word: string) => `${word} ${"x".repeat(600_000)}`;

describe("a queued run behind the watched one, both with large inputs", () => {
  it("is followed once the watched run ends: its question and answer show, Send stays off while it runs", async () => {
    const id = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
    const first = gate();
    const second = gate();
    server.upstream.enqueue(
      { text: ["first answer"], gate: first.wait },
      { text: ["second answer"], gate: second.wait },
    );
    const r1 = await server.request("POST", `/sessions/${id}/runs`, { body: { input: big("first") } });
    expect(r1.status).toBe(201);
    const r2 = await server.request("POST", `/sessions/${id}/runs`, {
      body: { input: big("second"), ifBusy: "enqueue" },
    });
    expect([r2.status, r2.body.status]).toEqual([201, "queued"]);
    const { page } = await newPage(browser);
    const shown = async () => ({
      sendDisabled: await page.locator("#send").isDisabled(),
      history: (await page.locator("#history li").allTextContents()).map((text) => text.slice(0, 13)),
    });
    try {
      await page.goto(`${server.url}/#${id}`);
      await page.locator("#live", { hasText: "first answer" }).waitFor();
      first.open();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      await expect
        .poll(async () => (await server.request("GET", `/sessions/${id}`)).body.activeRunId, WAIT)
        .toBe(r2.body.id);
      await expect
        .poll(shown, WAIT)
        .toEqual({ sendDisabled: true, history: ["first xxxxxxx", "first answer", "second xxxxxx"] });
      second.open();
      await expect
        .poll(shown, WAIT)
        .toEqual({ sendDisabled: false, history: ["first xxxxxxx", "first answer", "second xxxxxx", "second answer"] });
    } finally {
      first.open();
      second.open();
      await page.context().close();
    }
  });

  it("a run that interrupts the watched one from elsewhere is followed: its question and answer show", async () => {
    const id = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
    const held = gate();
    server.upstream.enqueue({ text: ["interrupted answer"], gate: held.wait }, { text: ["the new answer"] });
    const r1 = await server.request("POST", `/sessions/${id}/runs`, { body: { input: big("old") } });
    expect(r1.status).toBe(201);
    const { page } = await newPage(browser);
    try {
      await page.goto(`${server.url}/#${id}`);
      await page.locator("#live", { hasText: "interrupted answer" }).waitFor();
      const r2 = await server.request("POST", `/sessions/${id}/runs`, {
        body: { input: big("new"), ifBusy: "interrupt" },
      });
      expect(r2.status).toBe(201);
      await expect
        .poll(async () => (await page.locator("#history li").allTextContents()).map((text) => text.slice(0, 14)), WAIT)
        .toEqual(["old xxxxxxxxxx", "new xxxxxxxxxx", "the new answer"]);
      await expect.poll(() => page.locator("#send").isDisabled(), WAIT).toBe(false);
    } finally {
      held.open();
      await page.context().close();
    }
  });
});
