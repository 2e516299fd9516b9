/**
 * Send on a session that another client (another tab, the CLI, a script) made busy after the
 * console opened it. The server refuses the start 409 SESSION_BUSY and names the active run
 * (README, Busy sessions: `error.details.runId`). Before, the console printed the refusal in its
 * header and left the view as it was: the session shown idle (Send on, no Cancel), the active
 * run's question and streamed text nowhere, its approvals impossible to answer. Every further
 * Send was refused the same way; only a reload showed what the session was doing.
 *
 * Now, told which run is active, the console follows it as it follows the active run of a
 * session it opens (README, Console: "a live run with its text streaming in ... Cancel"): its
 * question and streamed text show, Send is off and Cancel on while it runs.
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

describe("Send refused 409 SESSION_BUSY (a run started elsewhere)", () => {
  it("shows the active run the refusal names: its question and text, Send off, Cancel on", async () => {
    const id = (await server.request("POST", "/sessions", { body: {} })).body.id as string;
    const hold = gate();
    const { page } = await newPage(browser);
    try {
      await page.goto(`${server.url}/#${id}`);
      await page.locator("#session-title", { hasText: id }).waitFor();
      // Another client starts a run in the session the console shows idle.
      server.upstream.enqueue({ text: ["the other answer"], gate: hold.wait });
      const other = await server.request("POST", `/sessions/${id}/runs`, {
        body: { input: "question from elsewhere" },
      });
      expect(other.status).toBe(201);
      await page.fill("#prompt", "my question");
      const refused = page.waitForResponse(
        (r) => r.url().endsWith(`/sessions/${id}/runs`) && r.request().method() === "POST",
      );
      await page.click("#send");
      const answer = await refused;
      expect(answer.status()).toBe(409);
      expect((await answer.json()).error.details.runId).toBe(other.body.id);
      await expect
        .poll(async () => ({
          history: await page.locator("#history li").allTextContents(),
          live: await page.locator("#live").textContent(),
          sendDisabled: await page.locator("#send").isDisabled(),
          cancelShown: await page.locator("#cancel").isVisible(),
        }))
        .toEqual({
          history: ["question from elsewhere"],
          live: "the other answer",
          sendDisabled: true,
          cancelShown: true,
        });
    } finally {
      hold.open();
      await page.context().close();
    }
  });
});
