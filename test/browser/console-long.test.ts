/**
 * The console over long lists and long output, in real Chromium, on a server without keys:
 * a session's whole history (more than one page), more sessions than a page lists, a long
 * streamed answer; and a watched run that is gone.
 */
import type { Browser, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RETRY_FIRST_MS } from "../../console/watch-run.js";
import { newId } from "../../src/ids.js";
import { runAwaitingApproval } from "../helpers/awaiting-approval.js";
import { seedSession } from "../helpers/seed.js";
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

/**
 * Answers GET /sessions/{id}/messages as the API does with `total` messages, `perPage` a page,
 * seq-numbered cursors: oldest first, or newest first with order=newest.
 */
function fakeMessages(id: string, total: number, perPage = 200) {
  const asked: string[] = [];
  const handler = async (route: Route) => {
    const url = new URL(route.request().url());
    asked.push(url.search);
    const cursor = url.searchParams.get("cursor");
    const newest = url.searchParams.get("order") === "newest";
    const before = cursor === null ? total + 1 : Number(cursor);
    const after = Number(cursor ?? 0);
    const seqs = newest
      ? Array.from({ length: Math.max(0, Math.min(perPage, before - 1)) }, (_, i) => before - 1 - i)
      : Array.from({ length: Math.max(0, Math.min(perPage, total - after)) }, (_, i) => after + i + 1);
    const items = seqs.map((seq) => ({
      id: `msg_${seq}`,
      runId: "run_old",
      seq,
      role: seq % 2 ? "user" : "assistant",
      content: `message ${seq}`,
    }));
    const last = seqs.at(-1);
    const more = last !== undefined && (newest ? last > 1 : last < total);
    const nextCursor = more ? String(last) : null;
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
      expect(items[204]).toBe("message 205");
      // The history's pages, then its newest message once more: the session was idle (see readSnapshot).
      expect(fake.asked).toEqual([
        "?order=newest&limit=200",
        "?order=newest&limit=200&cursor=6",
        "?order=newest&limit=1",
      ]);
    } finally {
      await page.context().close();
    }
  });

  it("a history past what the console reads at once shows its latest messages under a note saying so", async () => {
    const id = await newSession();
    // Pages of one message each (as a page of large messages is, within its 1 MiB): 25 are read.
    const fake = fakeMessages(id, 1000, 1);
    const { page } = await newPage(browser);
    try {
      await page.route(fake.pattern, fake.handler);
      await page.goto(`${server.url}/#${id}`);
      const note = page.locator("#history li.cut");
      await note.waitFor({ timeout: 5000 });
      expect(await note.textContent()).toContain("only the latest 25 messages are shown");
      const items = await page.locator("#history li").allTextContents();
      expect(items).toHaveLength(26);
      expect(items[0]).toContain("only the latest 25");
      expect(items.slice(1)).toEqual(Array.from({ length: 25 }, (_, i) => `message ${976 + i}`));
      // 25 pages, then the newest message once more: the session was idle (see readSnapshot).
      expect(fake.asked).toHaveLength(26);
      expect(fake.asked.at(-1)).toBe("?order=newest&limit=1");
    } finally {
      await page.context().close();
    }
  });
});

describe("many sessions", () => {
  it("past the newest 100 sessions, More sessions lists the next page, kept through a refresh", async () => {
    for (let i = 0; i < 110; i++) await seedSession(server.ctx.store, { id: newId("ses") });
    const all = (await server.request("GET", "/sessions?limit=200")).body;
    expect(all.nextCursor).toBeNull();
    const oldest = all.items.at(-1).id as string;
    const { page } = await newPage(browser);
    try {
      await page.goto(server.url);
      await page.locator("#sessions li").first().waitFor();
      expect(await page.locator("#sessions li").count()).toBe(100);
      await page.locator("#more-sessions").click();
      await page.locator(`[data-session="${oldest}"]`).waitFor({ timeout: 5000 });
      expect(await page.locator("#sessions li").count()).toBe(all.items.length);
      expect(await page.locator("#more-sessions").isHidden()).toBe(true);
      // Opening the oldest refreshes the list: it stays listed, marked as the one open.
      await page.locator(`[data-session="${oldest}"]`).click();
      await page.locator("#session-title", { hasText: oldest }).waitFor();
      await page.locator(`[data-session="${oldest}"][aria-current="true"]`).waitFor({ timeout: 5000 });
    } finally {
      await page.context().close();
    }
  });
});

describe("a watched run gone", () => {
  it("a run gone by the time its stream opens (its session deleted meanwhile) ends the watch, said so, instead of reconnecting for ever", async () => {
    const { sessionId: id, runId } = await runAwaitingApproval(server);
    const { page } = await newPage(browser);
    try {
      const streams: string[] = [];
      page.on("request", (request) => {
        if (request.url().includes(`/runs/${runId}/events`)) streams.push(request.url());
      });
      // The session's history arrives once the session is deleted: the console then watches a run that is gone.
      let deleted: () => void = () => {};
      const gone = new Promise<void>((resolve) => {
        deleted = resolve;
      });
      let read: () => void = () => {};
      const historyRead = new Promise<void>((resolve) => {
        read = resolve;
      });
      await page.route(`**/sessions/${id}/messages?*`, async (route) => {
        const response = await route.fetch();
        read();
        await gone;
        await route.fulfill({ response });
      });
      await page.goto(`${server.url}/#${id}`);
      await historyRead;
      expect((await server.request("DELETE", `/sessions/${id}`)).status).toBe(204);
      deleted();
      await page.locator("#status", { hasText: "disconnected" }).waitFor({ timeout: 5000 });
      expect(await page.locator("#status").textContent()).toContain(`run ${runId} not found`);
      const opened = streams.length;
      expect(opened).toBe(1);
      // Past the first reconnection's delay (RETRY_FIRST_MS): no stream is opened again.
      await new Promise((r) => setTimeout(r, RETRY_FIRST_MS + 500));
      expect(streams.length).toBe(opened);
    } finally {
      await page.context().close();
    }
  });
});

describe("long output", () => {
  it("a fast stream of text is written at most once an animation frame, not once a delta, and shown whole", async () => {
    const id = await newSession();
    const deltas = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(5, "0")} ${"x".repeat(20)}\n`);
    const { page } = await newPage(browser);
    try {
      await page.goto(`${server.url}/#${id}`);
      await page.locator("#session-title", { hasText: id }).waitFor();
      // Writes into #live (mutation records) and animation frames, counted from before the run.
      await page.evaluate(() => {
        const counts = { writes: 0, frames: 0, done: false };
        Object.assign(window, { counts });
        new MutationObserver((records) => {
          counts.writes += records.length;
        }).observe(document.getElementById("live") as HTMLElement, {
          childList: true,
          characterData: true,
          subtree: true,
        });
        const frame = () => {
          counts.frames++;
          if (!counts.done) requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
      });
      server.upstream.enqueue({ text: deltas });
      await page.fill("#prompt", "long please");
      await page.click("#send");
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor({ timeout: 15_000 });
      const counts = await page.evaluate(() => {
        const { counts } = window as unknown as { counts: { writes: number; frames: number; done: boolean } };
        counts.done = true;
        return counts;
      });
      // One write a frame at most, besides emptying it at the turn's start and end.
      expect(counts.writes).toBeLessThanOrEqual(counts.frames + 2);
      expect(await page.locator("#history li").last().textContent()).toBe(deltas.join(""));
    } finally {
      await page.context().close();
    }
  });
});
