import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const READS = 64;
/** Each read's path: the same file behind ~4,000 characters of `./` (within PATH_MAX_CHARS), each a name of its own. */
const longPath = (i: number) => `${"./".repeat(1_950 + i)}f.txt`;
const LATER_TURNS = 30;

describe("a model reading one file under long paths, then going on for many turns (a malicious upstream)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("each step's trace names the files sent within a bounded size; the run's steps stay small", async () => {
    // Before, every step's trace listed every file read in the window by the path the model gave,
    // whole: 64 reads of 15,000-character paths (one reply of ~1 MB) made each of the 30 later
    // steps store ~1 MB again, and each GET /runs/{id}/steps read and answered 31 MB. Paths are
    // now at most 4,096 characters; 64 of ~4,000 would still make each later step ~256 KB.
    server.upstream.enqueue(
      { toolCalls: [{ id: "w", name: "write_file", arguments: JSON.stringify({ path: "f.txt", content: "x" }) }] },
      {
        toolCalls: Array.from({ length: READS }, (_, i) => ({
          id: `r${i}`,
          name: "read_file",
          arguments: JSON.stringify({ path: longPath(i) }),
        })),
      },
      ...Array.from({ length: LATER_TURNS }, (_, i) => ({
        toolCalls: [{ id: `n${i}`, name: "no_such_tool", arguments: JSON.stringify({ n: i }) }],
      })),
      { text: "done" },
    );
    const session = (
      await server.request("POST", "/sessions", { body: { approval: { tools: { write_file: "allow" } } } })
    ).body as { id: string };
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
      body: { input: "go", maxTurns: 100 },
    });
    const run = waited.body.run as { id: string; stopReason: string };
    expect(run.stopReason).toBe("complete");
    const steps = await fetch(`${server.url}/runs/${run.id}/steps`);
    expect(steps.status).toBe(200);
    const text = await steps.text();
    const { items } = JSON.parse(text) as { items: Array<{ context: { includedFiles: string[] } }> };
    expect(items).toHaveLength(LATER_TURNS + 3);
    // The reads were made: the step after them names files it sent.
    expect(items[2]?.context.includedFiles.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan(2 * 1024 * 1024);
  }, 120_000);
});
