import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * search_files walks at most 64 directory levels (SEARCH_MAX_DEPTH in src/tools/search-files.ts):
 * a file 70 levels down (a path of 140 characters, which read_file reads without complaint) is
 * not searched. It was left out silently: "no matches in 1 file searched", `truncated: false`
 * and no note, telling a model (or an attacker hiding something from it: a backdoor, a leaked
 * key it was asked to find) that the text is nowhere in the workspace.
 *
 * README (Tools): search_files is "capped in matches (200 ...), files, the length of their
 * paths and time (a search stopped by a cap says it covered part of the workspace)". Expected:
 * the deep file is searched (its match shown), or the result is marked truncated and says that
 * only part of the workspace was searched, as for the other caps.
 */
describe("search_files over a tree deeper than its walk goes", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("finds the match 70 levels down, or says the search covered only part of the workspace", async () => {
    const session = (await server.request("POST", "/sessions", { body: {} })).body as { id: string };
    const workspace = server.ctx.sessions.workspacePath(await server.ctx.sessions.record(session.id, null));
    const deep = Array(70).fill("d").join("/");
    await mkdir(join(workspace, deep), { recursive: true });
    await writeFile(join(workspace, deep, "needle.txt"), "const TOKEN = 'NEEDLE-70';\n");
    await writeFile(join(workspace, "top.txt"), "nothing here\n");

    server.upstream.enqueue(
      {
        toolCalls: [
          { id: "s", name: "search_files", arguments: JSON.stringify({ pattern: "NEEDLE" }) },
          { id: "r", name: "read_file", arguments: JSON.stringify({ path: `${deep}/needle.txt` }) },
        ],
      },
      { text: "done" },
    );
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    expect(waited.body.run.stopReason).toBe("complete");
    const messages = await server.ctx.store.messages.ofRun(session.id, waited.body.run.id);
    const result = (id: string) => {
      const message = messages.find((m) => m.role === "tool" && m.toolCallId === id);
      if (message?.role !== "tool") throw new Error(`no result for ${id}`);
      return message;
    };
    // The file is in the workspace, and read_file reaches it.
    expect(result("r").content).toContain("NEEDLE-70");

    const search = result("s");
    if (search.content.includes("NEEDLE-70")) return; // searched: nothing was left out
    // Not searched: the result must say the search covered only part of the workspace.
    expect({ content: search.content, truncated: search.metadata?.truncated }).toMatchObject({
      content: expect.stringMatching(/only part of the workspace was searched/),
      truncated: true,
    });
  }, 60_000);
});
