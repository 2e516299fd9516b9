/**
 * The console, signed in with an API key, in real Chromium, when requests fail: a proxy's
 * 502 page while the server restarts, sessions gone or refused.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { launchChromium, newPage } from "./browser.js";

const KEY = "console-key-0123456789";
const auth = { authorization: `Bearer ${KEY}` };
/** What nginx answers while the server behind it is down. */
const BAD_GATEWAY = {
  status: 502,
  contentType: "text/html",
  body: "<html><body><h1>502 Bad Gateway</h1></body></html>",
};

let browser: Browser;
let server: TestServer;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchChromium(), startTestServer({ env: { AGENT_API_KEYS: KEY } })]);
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The console signed in with the key, showing its session list. */
async function signedIn(): Promise<{ page: Page; problems: string[] }> {
  const { page, problems } = await newPage(browser);
  await page.goto(server.url);
  await page.locator("#key-form").waitFor();
  // Asked for a key, the page shows nothing else (the app's sessions, its chat).
  expect(await page.locator("#app").isVisible()).toBe(false);
  await page.fill("#key", KEY);
  await page.click("#key-form button[type=submit]");
  await page.locator("#app").waitFor();
  return { page, problems };
}

describe("the console when requests fail", () => {
  it("a stream token answered 502 (a proxy while the server restarts) is asked for again: the run is followed to its end", async () => {
    server.upstream.enqueue({ text: "answered after a 502" });
    const { page } = await signedIn();
    try {
      let tokens = 0;
      await page.route("**/stream-token", async (route) => {
        if (++tokens === 1) await route.fulfill(BAD_GATEWAY);
        else await route.continue();
      });
      await page.locator("#new-session").click();
      await page.locator("#chat").waitFor();
      await page.fill("#prompt", "answer");
      await page.click("#send");
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor({ timeout: 5000 });
      expect(await page.locator("#history li").allTextContents()).toEqual(["answer", "answered after a 502"]);
      expect(tokens).toBe(2);
    } finally {
      await page.context().close();
    }
  });

  it("signed in, the header no longer says the server needs a key", async () => {
    const { page } = await signedIn();
    try {
      await page.locator("#sessions").waitFor({ state: "attached" });
      expect(await page.locator("#status").textContent()).toBe("");
    } finally {
      await page.context().close();
    }
  });

  it("a session deleted meanwhile, clicked in the list: its error shows, the session open stays open", async () => {
    const gone = (await server.request("POST", "/sessions", { body: {}, headers: auth })).body.id as string;
    const { page } = await signedIn();
    try {
      await page.locator("#new-session").click();
      await page.locator("#chat").waitFor();
      const open = (await page.locator("#session-title").textContent()) ?? "";
      expect((await server.request("DELETE", `/sessions/${gone}`, { headers: auth })).status).toBe(204);
      await page.locator(`[data-session="${gone}"]`).click();
      await page.locator("#status", { hasText: "404" }).waitFor({ timeout: 5000 });
      expect(await page.locator("#status").textContent()).toContain(gone);
      expect(await page.locator("#session-title").textContent()).toBe(open);
      expect(new URL(page.url()).hash).toBe(`#${open}`);
    } finally {
      await page.context().close();
    }
  });

  it("a new session refused (429 TOO_MANY_SESSIONS): the refusal shows, the view stays", async () => {
    const { page } = await signedIn();
    try {
      await page.route("**/sessions", (route) =>
        route.request().method() === "POST"
          ? route.fulfill({
              status: 429,
              contentType: "application/json",
              body: JSON.stringify({ error: { code: "TOO_MANY_SESSIONS", message: "this key has 1000 sessions" } }),
            })
          : route.continue(),
      );
      await page.locator("#new-session").click();
      await page.locator("#status", { hasText: "TOO_MANY_SESSIONS" }).waitFor({ timeout: 5000 });
      expect(await page.locator("#status").textContent()).toContain("this key has 1000 sessions");
      expect(await page.locator("#chat").isHidden()).toBe(true);
    } finally {
      await page.context().close();
    }
  });

  it("an address whose hash is not a session id is not opened: nothing it names is requested with the key", async () => {
    const session = (await server.request("POST", "/sessions", { body: {}, headers: auth })).body.id as string;
    const { page } = await newPage(browser);
    const paths: string[] = [];
    page.on("request", (r) => paths.push(new URL(r.url()).pathname));
    try {
      // As pasted from a link: the session, then a path out of it.
      await page.goto(`${server.url}/#${session}/../../healthz?`);
      await page.locator("#key-form").waitFor();
      await page.fill("#key", KEY);
      await page.click("#key-form button[type=submit]");
      await page.locator("#app").waitFor();
      await page.waitForLoadState("networkidle");
      expect(paths.filter((path) => !path.startsWith("/console/") && path !== "/sessions" && path !== "/")).toEqual([]);
      expect(await page.locator("#status").textContent()).toContain("does not name a session");
      expect(await page.locator("#chat").isHidden()).toBe(true);
    } finally {
      await page.context().close();
    }
  });

  it("a proxy's 502 page where JSON was expected shows as its HTTP status, not as a JSON syntax error", async () => {
    const { page } = await newPage(browser);
    try {
      await page.route("**/sessions?*", (route) => route.fulfill(BAD_GATEWAY));
      await page.goto(server.url);
      await page.locator("#status", { hasText: "HTTP 502" }).waitFor({ timeout: 5000 });
      expect(await page.locator("#status").textContent()).not.toContain("SyntaxError");
    } finally {
      await page.context().close();
    }
  });

  it("the page asks for no favicon (the server has none: a 401 or 404 in the browser's console)", async () => {
    const { page } = await newPage(browser);
    try {
      // The browser's own requests (the favicon's) are seen by the DevTools protocol only.
      const cdp = await page.context().newCDPSession(page);
      await cdp.send("Network.enable");
      const urls: string[] = [];
      cdp.on("Network.requestWillBeSent", (event) => urls.push(event.request.url));
      await page.goto(server.url);
      await page.locator("#key-form").waitFor();
      await page.waitForLoadState("networkidle");
      expect(urls.filter((url) => url.includes("favicon"))).toEqual([]);
      expect(urls.length).toBeGreaterThan(1);
    } finally {
      await page.context().close();
    }
  });
});
