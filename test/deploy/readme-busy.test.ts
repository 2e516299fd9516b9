import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { FakeReply } from "../fakes/openai-upstream.js";
import { assignedNames, readmeSteps, runBlock } from "../helpers/readme-steps.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
let server: TestServer;
let work: ReturnType<typeof tempDir>;

/** The scripted model: it answers by the latest user message and whether a tool result followed it. */
// biome-ignore lint/suspicious/noExplicitAny: the request body the client sent.
function scriptedModel(body: any): FakeReply {
  const messages: Array<{ role: string; content: unknown }> = body.messages;
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const input = String(messages[lastUser]?.content ?? "");
  const answered = messages.slice(lastUser + 1).some((m) => m.role === "tool");
  const shell = (id: string, command: string): FakeReply => ({
    toolCalls: [{ id, name: "shell", arguments: JSON.stringify({ command }) }],
  });
  if (input === "Run the test suite") return shell("call_tests", "npm test");
  if (input === "Say hello") return { text: "Hello!" };
  if (input === "Forget the tests, what time is it?") return { text: "I cannot see a clock." };
  if (input === "Run the linter") return answered ? { text: "Linted." } : shell("call_lint", "echo linted");
  if (input === "Then say goodbye") return { text: "Linted. Goodbye!" };
  return { status: 400, errorBody: { error: { message: `no script for: ${input}` } } };
}

beforeAll(async () => {
  server = await startTestServer();
  server.upstream.fallback = scriptedModel;
  work = tempDir("readme-busy-");
});
afterAll(async () => {
  await server?.close();
  work?.cleanup();
});

async function awaitingApproval(runId: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if ((await server.request("GET", `/runs/${runId}`)).body.status === "awaiting_approval") return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`run ${runId} did not come to wait for approval`);
}

it("the README's busy-session example runs as shown: reject, enqueue, interrupt and steer", async () => {
  const steps = readmeSteps(readme, "busy");
  expect(steps).toHaveLength(5);
  const names = assignedNames(steps.map((s) => s.code));
  let vars: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: work.path, BASE: server.url };
  for (const [index, step] of steps.entries()) {
    // What a person sees before typing the next step: the run they started waits for approval.
    if (index === 1) await awaitingApproval(vars.RUN ?? "");
    if (index === 4) await awaitingApproval(vars.RUN2 ?? "");
    const result = await runBlock(step.code, vars, names, work.path);
    expect(result.code, result.stderr).toBe(0);
    vars = { ...vars, ...result.vars };
    if (step.shown !== null) expect(result.stdout).toBe(step.shown);
  }
});
