import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PATH_MAX_CHARS } from "../../src/tools/path-input.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** A path of 150,00x characters that names one entry of the workspace root: `./` again and again. */
const longPath = (name: string) => `${"./".repeat(75_000)}${name}`;
/** A piece only the long paths hold. */
const PIECE = "./".repeat(1_000);

describe("a model sending the workspace tools paths of any length (a malicious upstream)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("an over-long path is an INVALID_ARGUMENTS result naming only its length; nothing echoes the path", async () => {
    // Before, every tool took the path whole and echoed it: each result ("... does not exist",
    // "wrote 1 bytes to ...") stored and sent 150 KB more, and write_file created the file.
    const calls = [
      { id: "r", name: "read_file", arguments: JSON.stringify({ path: longPath("missing.txt") }) },
      { id: "w", name: "write_file", arguments: JSON.stringify({ path: longPath("new.txt"), content: "x" }) },
      {
        id: "e",
        name: "edit_file",
        arguments: JSON.stringify({ path: longPath("missing.txt"), oldText: "a", newText: "b" }),
      },
      { id: "l", name: "list_files", arguments: JSON.stringify({ path: longPath("nodir") }) },
      { id: "s", name: "search_files", arguments: JSON.stringify({ pattern: "x", path: longPath("nodir") }) },
    ];
    server.upstream.enqueue({ toolCalls: calls }, { text: "done" });
    const session = (
      await server.request("POST", "/sessions", {
        body: { approval: { tools: { write_file: "allow", edit_file: "allow" } } },
      })
    ).body as { id: string };
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    const run = waited.body.run as { id: string; stopReason: string };
    expect(run.stopReason).toBe("complete");

    const messages = await server.ctx.store.messages.ofRun(session.id, run.id);
    const results = messages.filter((m) => m.role === "tool");
    expect(results).toHaveLength(calls.length);
    for (const result of results) {
      const call = calls.find((c) => result.role === "tool" && c.id === result.toolCallId);
      const length = (JSON.parse(call?.arguments ?? "{}") as { path: string }).path.length;
      expect(result.metadata).toMatchObject({ errorCode: "INVALID_ARGUMENTS", retryable: true });
      expect(result.content).toBe(
        `invalid arguments: path: a path is at most ${PATH_MAX_CHARS} characters (PATH_MAX); ` +
          `this one has ${length.toLocaleString("en-US")}`,
      );
    }
    const workspace = server.ctx.sessions.workspacePath(await server.ctx.sessions.record(session.id, null));
    expect(existsSync(join(workspace, "new.txt"))).toBe(false);

    // The path is stored once, in the model's reply (its calls' input, as the model sent them).
    const events = await server.ctx.store.events.after(run.id, 0);
    const holding = events.filter((event) => event.data.includes(PIECE));
    expect(holding.map((event) => (JSON.parse(event.data) as { type: string }).type)).toEqual(["message"]);
    const others = events.filter((event) => !event.data.includes(PIECE));
    expect(others.reduce((sum, event) => sum + event.data.length, 0)).toBeLessThan(32 * 1024);
    const steps = await fetch(`${server.url}/runs/${run.id}/steps`);
    expect((await steps.text()).includes(PIECE)).toBe(false);
  }, 60_000);
});
