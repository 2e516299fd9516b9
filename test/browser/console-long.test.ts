/**
 * The console over long lists and long output, in real Chromium, on a server without keys:
 * a session's whole history (more than one page), every session (more than one page).
 */
import type { Browser, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

const newSession = async (): Promise<string> => (await server.request("POST", "/sessions", { body: {} })).body.id;

/** Answers GET /sessions/{id}/messages with `total` messages, `perPage` a page, seq-numbered cursors. */
function fakeMessages(id: string, total: number, perPage = 200) {
  const asked: string[] = [];
  const handler = async (route: Route) => {
    const url = new URL(route.request().url());
    asked.push(url.search);
    const after = Number(url.searchParams.get("cursor") ?? 0);
    const seqs = Array.from({ length: Math.max(0, Math.min(perPage, total - after)) }, (_, i) => after + i + 1);
    const items = seqs.map((seq) => ({
      id: `msg_${seq}`,
      runId: "run_old",
      seq,
      role: seq % 2 ? "user" : "assistant",
      content: `message ${seq}`,
    }));
    const nextCursor = after + items.length < total ? String(after + items.length) : null;
    await route.fulfill({ contentType: "application/json", body: JSON.stringify({ items, nextCursor }) });
  };
  return { pattern: `**/sessions/${id}/messages?*`, handler, asked };
}

describe("long lists", () => {
  it("a session of more than a page of messages shows all of them, the newest last", async () => {
    const id = await newSession();
    const fake = fakeMessages(id, 205);
    const { page } = await newPage(browser);
    try {
      await page.route(fake.pattern, fake.handler);
      await page.goto(`${server.url}/#${id}`);
      await page.locator("#history li", { hasText: "message 205" }).waitFor({ timeout: 5000 });
      const items = await page.locator("#history li").allTextContents();
      expect(items).toHaveLength(205);
      expect(items[0]).toBe("message 1");
      expect(fake.asked).toEqual(["?limit=200", "?limit=200&cursor=200"]);
    } finally {
      await page.context().close();
    }
  });

  it("a history past what the console reads at once ends with a note saying so", async () => {
    const id = await newSession();
    // 25 pages of 200 are read (5,000 messages); the 5,001st is not.
    const fake = fakeMessages(id, 5001);
    const { page } = await newPage(browser);
    try {
      await page.route(fake.pattern, fake.handler);
      await page.goto(`${server.url}/#${id}`);
      const note = page.locator("#history li.cut");
      await note.waitFor({ timeout: 5000 });
      expect(await note.textContent()).toContain("only the first 5000 messages are shown");
      expect(await page.locator("#history li:not(.cut)").count()).toBe(5000);
      expect(fake.asked).toHaveLength(25);
    } finally {
      await page.context().close();
    }
  });
});
