/**
 * Attacker: the model. `--json` on a terminal prints each event's JSON as the server sent it.
 * JSON escapes C0 controls but not C1 ones (U+0080-U+009F), which terminals that read C1
 * controls in UTF-8 (xterm, VTE) take as CSI/OSC: U+009B "2J" clears the screen, U+009D
 * "0;title" U+009C retitles the window. Escaped as `\u009b` they mean the same JSON.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCli } from "../helpers/cli-process.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

describe("CLI --json on a terminal", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
    server.upstream.fallback = () => ({ text: "hi\u009b2J\u009b3J\u009d0;pwned\u009c\u0085there" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("writes no C1 control from the model to the terminal, and the lines stay the same JSON", async () => {
    const cli = startCli({ args: ["run", "--json", "hi"], env: { AGENT_URL: server.url }, pty: true });
    const result = await cli.done;
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/[\u0080-\u009f]/);
    const lines = result.stdout.split(/\r?\n/).filter((line) => line.startsWith("{"));
    const texts = lines
      .map((line) => JSON.parse(line))
      .filter((e) => e.type === "message" && e.message.role === "assistant");
    expect(texts[0].message.content).toBe("hi\u009b2J\u009b3J\u009d0;pwned\u009c\u0085there");
  });
});
