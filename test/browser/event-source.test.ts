/**
 * A browser's own EventSource and fetch against the API from another origin, in real Chromium.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, it } from "vitest";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer } from "../helpers/test-server.js";
import { launchChromium, newPage, screenshot, staticOrigin } from "./browser.js";

const KEY = "browser-key-0123456789";
const auth = { authorization: `Bearer ${KEY}` };
let browser: Browser;
let origin: Awaited<ReturnType<typeof staticOrigin>>;
const shots = tempDir("browser-event-source-");
/**
 * How long a wait for the page may take: generous, since the whole suite shares two cores
 * with Chromium (a wait that passes in well under a second alone once took over 8 s there).
 */
const WAIT_MS = 20_000;
/** A test that makes several such waits. */
const TEST_MS = 90_000;

beforeAll(async () => {
  [browser, origin] = await Promise.all([
    launchChromium(),
    staticOrigin({ "/": { type: "text/html", body: "<!doctype html><title>client</title><pre id=log></pre>" } }),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await origin?.close();
  console.log(`browser screenshots: ${shots.path}`);
});

/** Opens an EventSource in the page; events, opens and errors are kept in `window.es`. */
async function openEventSource(page: Page, url: string): Promise<void> {
  await page.evaluate((u) => {
    const state = { events: [] as { id: string; type: string }[], opens: 0, errors: 0, readyState: 0 };
    const w = window as unknown as { es: typeof state; source: EventSource };
    w.es = state;
    const source = new EventSource(u);
    w.source = source;
    const log = document.getElementById("log") as HTMLElement;
    const types = ["run.started", "turn.started", "text.delta", "message", "approval.requested"];
    for (const type of [...types, "approval.resolved", "tool.started", "run.finished"]) {
      source.addEventListener(type, (e) => {
        state.events.push({ id: (e as MessageEvent).lastEventId, type });
        log.textContent += `${(e as MessageEvent).lastEventId} ${type}\n`;
      });
    }
    source.onopen = () => {
      state.opens++;
      log.textContent += "(open)\n";
    };
    source.onerror = () => {
      state.errors++;
      state.readyState = source.readyState;
      log.textContent += `(error, readyState ${source.readyState})\n`;
    };
  }, url);
}

// biome-ignore lint/suspicious/noExplicitAny: the page's state is read as the page kept it.
const pageState = (page: Page): Promise<any> => page.evaluate(() => (window as unknown as { es: unknown }).es);

/**
 * Waits (at most WAIT_MS) until the page's EventSource has received an event of `type`. On a
 * timeout it fails with what the page saw and what `stored()` says the server has (the run and
 * its events), so a failure on a loaded machine says which side stopped.
 */
async function receivedEvent(page: Page, type: string, stored: () => Promise<unknown>): Promise<void> {
  try {
    await page.waitForFunction(
      (t) => (window as unknown as { es: { events: { type: string }[] } }).es.events.some((e) => e.type === t),
      type,
      { timeout: WAIT_MS },
    );
  } catch (err) {
    const seen = await pageState(page).catch((e: unknown) => `unreadable: ${String(e)}`);
    const kept = await stored().catch((e: unknown) => `unreadable: ${String(e)}`);
    throw new Error(
      `no ${type} within ${WAIT_MS} ms (${(err as Error).message.split("\n")[0]}); the page saw ${JSON.stringify(seen)}; the server has ${JSON.stringify(kept)}`,
    );
  }
}

// The two reconnection tests mostly wait on EventSource's retry (2 s each time): they run at
// once, each with a server and a model upstream of its own (replies never cross).
describe.concurrent("EventSource in Chromium", () => {
  it(
    "without keys: receives every event, then stops reconnecting after run.finished (the resume is answered 204)",
    async ({ expect }) => {
      const { lines, logger } = capturedLogs();
      // The server's own model upstream, closed with it.
      const server = await startTestServer({ env: { CORS_ORIGINS: origin.url }, logger });
      const upstream = server.upstream;
      const { page, problems } = await newPage(browser);
      try {
        upstream.enqueue({ toolCalls: [{ id: "call_ls", name: "list_files", arguments: "{}" }] }, { text: "empty" });
        const session = await server.request("POST", "/sessions", { body: {} });
        const run = (
          await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, { body: { input: "ls" } })
        ).body.run;
        const stored = (await server.ctx.store.events.after(run.id, 0)).map((e) => ({
          id: String(e.seq),
          type: e.type,
        }));
        await page.goto(origin.url);
        await openEventSource(page, `${server.url}/runs/${run.id}/events`);
        // The stream ends after run.finished; EventSource reconnects once (retry: 2 s), gets 204 and gives up.
        await page.waitForFunction(() => (window as unknown as { source: EventSource }).source.readyState === 2, null, {
          timeout: WAIT_MS,
        });
        await page.waitForTimeout(2500);
        const state = await pageState(page);
        expect(state.events).toEqual(stored);
        expect(state.opens).toBe(1);
        expect(await page.evaluate(() => (window as unknown as { source: EventSource }).source.readyState)).toBe(2);
        const requests = lines.filter((l) => l.includes(`"url":"/runs/${run.id}/events"`)).map((l) => JSON.parse(l));
        expect(requests.map((r) => r.statusCode)).toEqual([200, 204]);
        await screenshot(page, shots.path, "event-source-no-keys");
        expect(problems.filter((p) => !p.includes("204"))).toEqual([]);
      } finally {
        await page.context().close();
        await server.close();
      }
    },
    TEST_MS,
  );

  it(
    "with keys: a stream token opens it, it resumes across a server restart with Last-Event-ID, and stops after run.finished",
    async ({ expect, onTestFinished }) => {
      const dir = tempDir("browser-restart-");
      // A model upstream of its own, kept across the restart.
      const upstream = await startFakeUpstream();
      onTestFinished(() => upstream.close());
      // One retry, as a server has by default (2): a model request once found the pooled
      // connection to the fake upstream reset (ECONNRESET) and failed its run in CI.
      const env = { AGENT_API_KEYS: KEY, CORS_ORIGINS: origin.url, MODEL_MAX_RETRIES: "1" };
      let server = await startTestServer({ upstream, env, dir: dir.path });
      const port = Number(new URL(server.url).port);
      const { page } = await newPage(browser);
      try {
        upstream.enqueue(
          { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"A"}' }] },
          { text: "written" },
        );
        const session = await server.request("POST", "/sessions", { body: {}, headers: auth });
        const run = (
          await server.request("POST", `/sessions/${session.body.id}/runs`, { body: { input: "w" }, headers: auth })
        ).body;
        await page.goto(origin.url);
        // Without a token (EventSource cannot send the key) the stream is refused.
        await openEventSource(page, `${server.url}/runs/${run.id}/events`);
        await page.waitForFunction(() => (window as unknown as { source: EventSource }).source.readyState === 2, null, {
          timeout: WAIT_MS,
        });
        expect((await pageState(page)).events).toEqual([]);

        const token = (await server.request("POST", `/runs/${run.id}/stream-token`, { headers: auth })).body;
        await openEventSource(page, server.url + token.eventsUrl);
        const serverSide = async () => ({
          run: (await server.request("GET", `/runs/${run.id}`, { headers: auth })).body,
          events: (await server.ctx.store.events.after(run.id, 0)).map((e) => `${e.seq} ${e.type}`),
        });
        await receivedEvent(page, "approval.requested", serverSide);
        await server.close({ keepDir: true, resume: true });
        server = await startTestServer({ upstream, env, dir: dir.path, port });
        await page.waitForFunction(() => (window as unknown as { es: { opens: number } }).es.opens === 2, null, {
          timeout: WAIT_MS,
        });
        const decided = await server.request("POST", `/runs/${run.id}/approvals/call_w`, {
          body: { decision: "approve" },
          headers: auth,
        });
        expect(decided.status).toBe(200);
        await receivedEvent(page, "run.finished", serverSide);
        const state = await pageState(page);
        const stored = (await server.ctx.store.events.after(run.id, 0)).map((e) => ({
          id: String(e.seq),
          type: e.type,
        }));
        expect(state.events).toEqual(stored);
        await page.waitForFunction(() => (window as unknown as { source: EventSource }).source.readyState === 2, null, {
          timeout: WAIT_MS,
        });
        await screenshot(page, shots.path, "event-source-keys-restart");
      } finally {
        await page.context().close();
        await server.close();
        dir.cleanup();
      }
    },
    TEST_MS,
  );

  it("CORS from another origin: the page reads Location, X-Request-Id and WWW-Authenticate; other origins are refused", async ({
    expect,
  }) => {
    const server = await startTestServer({ env: { AGENT_API_KEYS: KEY, CORS_ORIGINS: origin.url } });
    const elsewhere = await staticOrigin({ "/": { type: "text/html", body: "<!doctype html><title>other</title>" } });
    const { page } = await newPage(browser);
    try {
      await page.goto(origin.url);
      const seen = await page.evaluate(
        async ({ api, key }) => {
          const created = await fetch(`${api}/sessions`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ metadata: { from: "browser" } }),
          });
          const refused = await fetch(`${api}/sessions`);
          const result = {
            status: created.status,
            location: created.headers.get("location"),
            requestId: created.headers.get("x-request-id"),
            id: (await created.json()).id,
            refused: refused.status,
            wwwAuthenticate: refused.headers.get("www-authenticate"),
          };
          document.body.textContent = JSON.stringify(result, null, 2);
          return result;
        },
        { api: server.url, key: KEY },
      );
      expect(seen).toMatchObject({
        status: 201,
        location: `/sessions/${seen.id}`,
        requestId: expect.stringMatching(/^req_/),
        refused: 401,
        wwwAuthenticate: 'Bearer realm="agent-server"',
      });
      await screenshot(page, shots.path, "cors-allowed");
      await page.goto(elsewhere.url);
      const blocked = await page.evaluate(async (api) => {
        try {
          await fetch(`${api}/sessions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "{}",
          });
          return "read";
        } catch (err) {
          return String(err);
        }
      }, server.url);
      expect(blocked).toMatch(/TypeError/);
    } finally {
      await page.context().close();
      await elsewhere.close();
      await server.close();
    }
  });
});
