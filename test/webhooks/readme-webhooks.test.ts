import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { assignedNames, readmeSteps, runBlock } from "../helpers/readme-steps.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { startWebhookReceiver, WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
let server: TestServer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let work: ReturnType<typeof tempDir>;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer({ env: { WEBHOOK_SECRET, WEBHOOK_ALLOW_PRIVATE: "1", WEBHOOK_POLL_MS: "20" } });
  server.upstream.fallback = () => ({ text: "hello" });
  work = tempDir("readme-webhooks-");
});
afterAll(async () => {
  await server?.close();
  await receiver?.close();
  work?.cleanup();
});

it("the README's webhook example runs as shown: the run's end is delivered, signed, and listed", async () => {
  const steps = readmeSteps(readme, "webhooks");
  const names = assignedNames(steps.map((s) => s.code));
  let vars: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: work.path,
    BASE: server.url,
    HOOK: receiver.url,
  };
  for (const [index, step] of steps.entries()) {
    // What a person sees before the next step: the delivery has arrived.
    if (index > 0) await receiver.until((d) => d.payload.type === "run.finished" && d.answered === 200);
    const result = await runBlock(step.code, vars, names, work.path);
    expect(result.code, result.stderr).toBe(0);
    vars = { ...vars, ...result.vars };
    if (step.shown !== null) expect(result.stdout).toBe(step.shown);
  }
  expect(receiver.received.map((d) => [d.payload.type, d.signatureValid])).toEqual([["run.finished", true]]);
});
