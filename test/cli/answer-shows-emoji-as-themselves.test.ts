/**
 * 28082bb widened the CLI's `printable` (src/cli/printable.ts) to escape every
 * Default_Ignorable_Code_Point, variation selectors included, for an approval's arguments. But
 * `printable` is also what the model's answer goes through on a terminal
 * (src/cli/terminal-out.ts `text`): the most common emoji the models write carry VARIATION
 * SELECTOR-16 (⚠️ ✔️ ➡️ ❤️ are U+26A0 U+FE0F ...), so a user reading an answer in the terminal
 * now sees "⚠\ufe0f Careful" where the answer says "⚠️ Careful".
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCli } from "../helpers/cli-process.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

it("an answer's emoji reach the terminal as themselves, not as escapes", async () => {
  const answer = "\u26a0\ufe0f Careful: step one \u2714\ufe0f then \u27a1\ufe0f step two";
  server.upstream.enqueue({ text: answer });
  const result = await runCli({ args: ["run", "hello"], env: { AGENT_URL: server.url }, pty: true });
  expect(result.stdout).toContain("Careful");
  expect(result.stdout).not.toContain("\\ufe0f");
  expect(result.stdout).toContain(answer);
});
