/**
 * A network drop on Send. The console POSTs the prompt with an Idempotency-Key so that a retry
 * starts nothing twice under its key (console/send-key.ts). Before, when the connection dropped
 * after the server took the POST (the run started and even finished) and before its answer
 * reached the page, the console showed "TypeError: Failed to fetch", left the prompt in the box
 * and Send enabled, and forgot the key. The user's natural retry (Send again) posted the same
 * prompt under a NEW key: the server started a second run, so the prompt ran twice (two user
 * messages, a second model request, possibly a second set of tool calls), and the first run's
 * answer was never shown in the view.
 *
 * Now a re-send of the same, unanswered submission reuses its Idempotency-Key (the server then
 * answers the first run, `Idempotent-Replayed: true`): the session holds the prompt once, and
 * the view shows its answer.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

describe("Send whose answer was lost on the way (a network drop)", () => {
  it("sending again does not run the prompt a second time; the run's answer shows", async () => {
    const id = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
    // One answer only: a second run of the prompt would get the fake's "no scripted reply" 500.
    server.upstream.enqueue({ text: "the one answer" });
    const { page } = await newPage(browser);
    const keys: (string | null)[] = [];
    let posts = 0;
    try {
      await page.goto(`${server.url}/#${id}`);
      await page.locator("#session-title", { hasText: id }).waitFor();
      await page.route(`**/sessions/${id}/runs`, async (route) => {
        if (route.request().method() !== "POST") return route.continue();
        keys.push(await route.request().headerValue("idempotency-key"));
        if (++posts > 1) return route.continue();
        // The server takes the first POST and its run ends; the answer is lost on the way back.
        const response = await route.fetch();
        const run = (await response.json()) as { id: string };
        await finishedRun(server, run.id);
        await route.abort("connectionreset");
      });
      await page.fill("#prompt", "the question");
      await page.click("#send");
      await expect
        .poll(
          async () => (await page.locator("#status").textContent()) || (await page.locator("#run-state").textContent()),
        )
        .not.toBe("");
      // What the user sees now (the prompt still in the box, Send on, the header saying no
      // answer came): when the console offers to send the prompt again, the user does.
      if ((await page.locator("#prompt").inputValue()) !== "" && (await page.locator("#send").isEnabled())) {
        await page.click("#send");
        await expect.poll(() => posts).toBe(2);
      }
      await page.locator("#run-state", { hasText: "run finished" }).waitFor({ timeout: 10_000 });
      const messages = (await server.request("GET", `/sessions/${id}/messages`)).body.items as {
        role: string;
        content: string;
      }[];
      const runs = (await server.request("GET", `/sessions/${id}/runs`)).body.items as unknown[];
      expect({
        runs: runs.length,
        userMessages: messages.filter((m) => m.role === "user").map((m) => m.content),
        history: await page.locator("#history li").allTextContents(),
        // Each POST of the prompt under the one key of its submission.
        keys: new Set(keys).size,
      }).toEqual({
        runs: 1,
        userMessages: ["the question"],
        history: ["the question", "the one answer"],
        keys: 1,
      });
    } finally {
      await page.context().close();
    }
  });
});
