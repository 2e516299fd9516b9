/**
 * A page built on `useChat` from @ai-sdk/react (bundled with vite, served from another origin)
 * talking to the chat route, in real Chromium: a message, a tool call that asks for approval,
 * Approve, and the answer.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { launchChromium, newPage, screenshot, staticOrigin } from "./browser.js";

const pageDir = fileURLToPath(new URL("./pages/use-chat/", import.meta.url));
const out = tempDir("browser-use-chat-");
let browser: Browser;
let origin: Awaited<ReturnType<typeof staticOrigin>>;
let server: TestServer;

/** The page's bundle, as a map of paths to files for the static origin. */
async function bundle(): Promise<Record<string, { type: string; body: Buffer }>> {
  const outDir = join(out.path, "dist");
  await build({
    configFile: false,
    root: pageDir,
    base: "/",
    logLevel: "silent",
    build: { outDir, emptyOutDir: true },
  });
  const files: Record<string, { type: string; body: Buffer }> = {
    "/": { type: "text/html", body: readFileSync(join(outDir, "index.html")) },
  };
  for (const name of readdirSync(join(outDir, "assets"))) {
    files[`/assets/${name}`] = { type: "text/javascript", body: readFileSync(join(outDir, "assets", name)) };
  }
  return files;
}

beforeAll(async () => {
  const [launched, files] = await Promise.all([launchChromium(), bundle()]);
  browser = launched;
  origin = await staticOrigin(files);
  server = await startTestServer({ env: { CORS_ORIGINS: origin.url } });
});
afterAll(async () => {
  await browser?.close();
  await origin?.close();
  await server?.close();
  console.log(`useChat screenshots: ${out.path}`);
});

it("a useChat page works unchanged: its message runs, the approval is the SDK's, Approve continues to the answer", async () => {
  server.upstream.enqueue(
    {
      text: "Let me write it. ",
      toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"hi.txt","content":"hi"}' }],
    },
    { text: ["Done: ", "hi.txt is written."] },
  );
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const { page, problems } = await newPage(browser);
  try {
    await page.goto(`${origin.url}/?api=${encodeURIComponent(server.url)}&session=${session.id}`);
    await page.fill("#input", "write hi.txt");
    await page.click("#send");
    const tool = page.locator('.tool[data-tool="write_file"]');
    await tool.locator(".approve").waitFor();
    expect(await tool.getAttribute("data-state")).toBe("approval-requested");
    expect(await page.locator(".message.assistant .text").first().textContent()).toBe("Let me write it. ");
    await screenshot(page, out.path, "use-chat-approval");
    await tool.locator(".approve").click();
    await page.locator(".message.assistant .text", { hasText: "hi.txt is written." }).waitFor();
    await page.locator("#status", { hasText: "status: ready" }).waitFor();
    expect(await tool.getAttribute("data-state")).toBe("output-available");
    expect(await page.locator(".message.assistant").count()).toBe(1);
    await screenshot(page, out.path, "use-chat-done");
    const history = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
    expect(history.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(problems).toEqual([]);
  } finally {
    await page.context().close();
  }
});
