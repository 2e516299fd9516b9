import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * A malicious model asks edit_file to replace every "a" of a 3 MB file with 200 characters.
 * The result would be 600 MB: edit_file refuses it as FILE_TOO_LARGE (its 5 MiB limit) from
 * the size it would have, before building it. It built the whole replaced text first, which
 * past V8's longest string threw a RangeError reported as a misleading non-retryable IO_ERROR;
 * just under it the server held a ~500 MB string before the size check refused it.
 */
describe("edit_file replaceAll whose result is huge (a malicious model)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("is refused as FILE_TOO_LARGE before the replaced text is built", async () => {
    const session = (
      await server.request("POST", "/sessions", { body: { approval: { tools: { edit_file: "allow" } } } })
    ).body as { id: string };
    const workspace = server.ctx.sessions.workspacePath(await server.ctx.sessions.record(session.id, null));
    await writeFile(join(workspace, "big.txt"), "a".repeat(3 * 1024 * 1024));
    server.upstream.enqueue(
      {
        toolCalls: [
          {
            id: "e",
            name: "edit_file",
            arguments: JSON.stringify({ path: "big.txt", oldText: "a", newText: "b".repeat(200), replaceAll: true }),
          },
        ],
      },
      { text: "done" },
    );
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    const run = waited.body.run as { id: string; stopReason: string };
    expect(run.stopReason).toBe("complete");
    const messages = await server.ctx.store.messages.ofRun(session.id, run.id);
    const result = messages.find((m) => m.role === "tool");
    expect({ content: result?.content, metadata: result?.metadata }).toMatchObject({
      metadata: { errorCode: "FILE_TOO_LARGE" },
    });
  }, 60_000);
});
