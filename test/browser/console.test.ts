/** The operator console at `/`, served by the server, used in real Chromium with an API key. */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { launchChromium, newPage, screenshot } from "./browser.js";

const KEY = "console-key-0123456789";
let browser: Browser;
let server: TestServer;
const shots = tempDir("browser-console-");

beforeAll(async () => {
  [browser, server] = await Promise.all([launchChromium(), startTestServer({ env: { AGENT_API_KEYS: KEY } })]);
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  console.log(`console screenshots: ${shots.path}`);
});

/** The console, signed in with the key, on a new session; returns the page and the session id. */
async function signedIn(at: TestServer = server): Promise<{ page: Page; sessionId: string; problems: string[] }> {
  const { page, problems } = await newPage(browser);
  await page.goto(at.url);
  await page.locator("#key-form").waitFor();
  await page.fill("#key", KEY);
  await page.click("#key-form button[type=submit]");
  await page.locator("#new-session").click();
  await page.locator("#chat").waitFor();
  const sessionId = (await page.locator("#session-title").textContent()) ?? "";
  return { page, sessionId, problems };
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#prompt", text);
  await page.click("#send");
}

const historyText = (page: Page) => page.locator("#history li").allTextContents();

describe("the console", () => {
  it("asks for a key (kept for the tab only), shows a pending approval with tool, reason and arguments; Approve runs it", async () => {
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"notes.txt","content":"hello"}' }] },
      { text: "I wrote notes.txt" },
    );
    const { page, sessionId, problems } = await signedIn();
    try {
      await send(page, "write notes");
      const card = page.locator('.approval[data-tool-call="call_w"]');
      await card.waitFor();
      expect(await card.textContent()).toMatch(/write_file asks for approval.*requires approval.*"path": "notes.txt"/s);
      await screenshot(page, shots.path, "approval-pending");
      await card.locator(".approve").click();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      expect(await card.count()).toBe(0);
      const history = await historyText(page);
      expect(history[0]).toBe("write notes");
      expect(history.at(-1)).toBe("I wrote notes.txt");
      expect(history.some((line) => line.startsWith("✓ call_w"))).toBe(true);
      await screenshot(page, shots.path, "approved");
      const session = (
        await server.request("GET", `/sessions/${sessionId}`, { headers: { authorization: `Bearer ${KEY}` } })
      ).body;
      expect(session.activeRunId).toBeNull();
      // Another tab has no key: it asks again.
      const other = await page.context().newPage();
      await other.goto(server.url);
      await other.locator("#key-form").waitFor();
      expect(await other.evaluate(() => sessionStorage.length)).toBe(0);
      expect(await page.evaluate(() => localStorage.length)).toBe(0);
      // Only the key probes were refused (401 before a key was given).
      expect(problems.filter((p) => !p.includes("status of 401"))).toEqual([]);
    } finally {
      await page.context().close();
    }
  });

  it("Deny with a reason: the model gets the denial, the run goes on", async () => {
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_sh", name: "shell", arguments: '{"command":"rm -rf build"}' }] },
      { text: "ok, I will not" },
    );
    const { page, sessionId } = await signedIn();
    try {
      await send(page, "clean up");
      const card = page.locator('.approval[data-tool-call="call_sh"]');
      await card.waitFor();
      await card.locator(".deny-reason").fill("not on this machine");
      await card.locator(".deny").click();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      const denied = (await historyText(page)).find((line) => line.startsWith("✗ call_sh"));
      expect(denied).toContain("not on this machine");
      await screenshot(page, shots.path, "denied");
      const messages = (
        await server.request("GET", `/sessions/${sessionId}/messages`, { headers: { authorization: `Bearer ${KEY}` } })
      ).body.items;
      expect(messages.find((m: { toolCallId?: string }) => m.toolCallId === "call_sh").metadata.errorCode).toBe(
        "DENIED",
      );
    } finally {
      await page.context().close();
    }
  });

  it("Cancel stops a live run: its streamed text goes, the run ends aborted", async () => {
    const hold = gate();
    server.upstream.enqueue({ text: ["thinking ", "hard"], gate: hold.wait });
    const { page } = await signedIn();
    try {
      await send(page, "think");
      await page.locator("#live", { hasText: "thinking hard" }).waitFor();
      await screenshot(page, shots.path, "live-before-cancel");
      await page.click("#cancel");
      await page.locator("#run-state", { hasText: "run finished: aborted" }).waitFor();
      hold.open();
      expect(await page.locator("#live").isHidden()).toBe(true);
      expect(await historyText(page)).toEqual(["think"]);
      await screenshot(page, shots.path, "cancelled");
    } finally {
      hold.open();
      await page.context().close();
    }
  });

  it("a reload mid-run picks up where it left off: the streamed text again, then the rest, nothing twice", async () => {
    const hold = gate();
    server.upstream.enqueue({ text: ["half ", "an answer"], gate: hold.wait });
    const { page } = await signedIn();
    try {
      await send(page, "answer");
      await page.locator("#live", { hasText: "half an answer" }).waitFor();
      await page.reload();
      await page.locator("#live", { hasText: "half an answer" }).waitFor();
      expect(await page.locator("#key-form").isHidden()).toBe(true);
      await screenshot(page, shots.path, "reloaded-mid-run");
      hold.open();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      expect(await historyText(page)).toEqual(["answer", "half an answer"]);
      await screenshot(page, shots.path, "reloaded-finished");
    } finally {
      hold.open();
      await page.context().close();
    }
  });

  it("a server restart mid-run: the console reconnects and picks up where it left off, the pending approval still there", async () => {
    const dir = tempDir("browser-console-restart-");
    const env = { AGENT_API_KEYS: KEY };
    const upstream = await startFakeUpstream();
    let own = await startTestServer({ env, dir: dir.path, upstream });
    const port = Number(new URL(own.url).port);
    upstream.enqueue(
      {
        text: "Writing it. ",
        toolCalls: [{ id: "call_r", name: "write_file", arguments: '{"path":"r.txt","content":"R"}' }],
      },
      { text: "written after the restart" },
    );
    const { page } = await signedIn(own);
    try {
      await send(page, "write r.txt");
      await page.locator('.approval[data-tool-call="call_r"]').waitFor();
      await own.close({ keepDir: true, resume: true });
      await page.locator("#status", { hasText: "reconnecting" }).waitFor();
      own = await startTestServer({ env, dir: dir.path, port, upstream });
      // EventSource reconnects by itself (Last-Event-ID, the same stream token) and gets the rest.
      await page.locator("#status", { hasText: "watching" }).waitFor({ timeout: 8000 });
      await page.locator('.approval[data-tool-call="call_r"] .approve').click();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      const history = await historyText(page);
      expect(history.filter((line) => line.startsWith("Writing it."))).toHaveLength(1);
      expect(history.at(-1)).toBe("written after the restart");
      await screenshot(page, shots.path, "restarted");
    } finally {
      await page.context().close();
      await own.close();
      await upstream.close();
      dir.cleanup();
    }
  });

  /**
   * Before, Send stayed enabled until the start's POST was answered: a double-click posted the
   * prompt twice (a second run, or 409 SESSION_BUSY). Now Send is off while the POST is on its
   * way, and each submission carries one Idempotency-Key.
   */
  it("a double-click on Send posts the prompt once, under one Idempotency-Key: one run, no refusal", async () => {
    // One answer: a second run, if one were started, would fail on the upstream's empty queue.
    server.upstream.enqueue({ text: "the one answer" });
    const { page, sessionId } = await signedIn();
    const firstOnItsWay = gate();
    const posts: { status: number; key: string | null }[] = [];
    try {
      // The first POST is held until both clicks are in (a slow network, a busy server).
      await page.route(`**/sessions/${sessionId}/runs`, async (route) => {
        if (route.request().method() !== "POST") return route.continue();
        const post = { status: 0, key: await route.request().headerValue("idempotency-key") };
        if (posts.push(post) === 1) await firstOnItsWay.wait;
        const response = await route.fetch();
        post.status = response.status();
        await route.fulfill({ response });
      });
      await page.fill("#prompt", "question once");
      await page.dblclick("#send");
      firstOnItsWay.open();
      await page.locator("#run-state", { hasText: "run finished: complete" }).waitFor();
      const messages = (
        await server.request("GET", `/sessions/${sessionId}/messages`, { headers: { authorization: `Bearer ${KEY}` } })
      ).body.items;
      expect({
        posts: posts.map((p) => p.status),
        keyed: posts.every((p) => (p.key ?? "").length > 0),
        userMessages: messages.filter((m: { role: string }) => m.role === "user").length,
        refusalShown: /SESSION_BUSY|409/.test((await page.locator("#status").textContent()) ?? ""),
      }).toEqual({ posts: [201], keyed: true, userMessages: 1, refusalShown: false });
    } finally {
      firstOnItsWay.open();
      await page.context().close();
    }
  });

  /**
   * Before, the approval card's escaping missed default-ignorable code points outside its list
   * (Khmer inherent vowels, Mongolian free variation selectors, U+FFF0–FFF8, the tag plane past
   * U+E007F): they rendered as nothing, so a path read as another. Now every one is an escape.
   */
  it("an approval card's arguments show every character that renders as nothing as an escape", async () => {
    const missed = [0x17b4, 0x17b5, 0x180b, 0x180c, 0x180d, 0x180f, 0xfff0, 0xe0080, 0xe0fff];
    const path = `notes${missed.map((c) => String.fromCodePoint(c)).join("")}.txt`;
    server.upstream.enqueue({
      toolCalls: [{ id: "call_u", name: "write_file", arguments: JSON.stringify({ path, content: "x" }) }],
    });
    const { page } = await signedIn();
    try {
      await send(page, "write");
      const pre = page.locator('.approval[data-tool-call="call_u"] pre');
      await pre.waitFor();
      // What the approver reads: the path line, and whether it renders as wide as plain "notes.txt".
      const seen = await pre.evaluate((node) => {
        const line = (node.textContent ?? "").split("\n").find((l) => l.includes('"path"')) ?? "";
        const probe = document.createElement("pre");
        probe.style.cssText = getComputedStyle(node).cssText;
        document.body.append(probe);
        const width = (text: string) => {
          probe.textContent = text;
          const range = document.createRange();
          range.selectNodeContents(probe);
          return range.getBoundingClientRect().width;
        };
        const asWideAsPlain = width(line) === width('  "path": "notes.txt",');
        probe.remove();
        return { line, asWideAsPlain };
      });
      const escapes = missed.map((c) => (c > 0xffff ? `\\u{${c.toString(16)}}` : `\\u${c.toString(16)}`));
      expect(seen).toEqual({ line: `  "path": "notes${escapes.join("")}.txt",`, asWideAsPlain: false });
      await page.click("#cancel");
      await page.locator("#run-state", { hasText: "run finished: aborted" }).waitFor();
    } finally {
      await page.context().close();
    }
  });
});
