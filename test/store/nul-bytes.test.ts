import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
afterEach(async () => {
  await server?.close();
});

describe.each(["sqlite", "postgres"] as const)("a NUL byte in read_file output on %s", (backend) => {
  it("the run records the tool result and completes; the session goes on working", async () => {
    server = await startTestServer({ backend });
    const created = await server.request("POST", "/sessions", { body: {} });
    const sessionId: string = created.body.id;
    const text = `${`${"x".repeat(99)}\n`.repeat(100)}a\u0000b\n`;
    await writeFile(join(server.dir, "workspaces", sessionId, "nul.txt"), text);
    server.upstream.enqueue(
      { toolCalls: [{ id: "call_read", name: "read_file", arguments: '{"path":"nul.txt"}' }] },
      { text: "read it" },
    );
    const res = await server.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input: "read" } });
    expect(res.status).toBe(200);
    expect(res.body.run.stopReason).toBe("complete");

    // The model was sent the NUL, and the history holds it as the tool gave it.
    const toolResult = server.upstream.requests[1]?.body.messages.find((m: { role: string }) => m.role === "tool");
    expect(toolResult.content).toContain("a\u0000b");
    const history = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items;
    expect(history.find((m: { role: string }) => m.role === "tool").content).toBe(toolResult.content);

    server.upstream.enqueue({ text: "again" });
    const next = await server.request("POST", `/sessions/${sessionId}/runs?wait=true`, { body: { input: "more" } });
    expect(next.body.run.stopReason).toBe("complete");
  }, 60_000);
});

describe.each(["sqlite", "postgres"] as const)("NUL bytes in what a client sends on %s", (backend) => {
  it("a run input, system prompt and metadata with U+0000 are kept as sent and sent to the model as given", async () => {
    server = await startTestServer({ backend });
    const created = await server.request("POST", "/sessions", {
      body: { system: "be \u0000 brief", metadata: { tag: "x\u0000y" } },
    });
    expect(created.status).toBe(201);
    const sessionId: string = created.body.id;
    const session = await server.request("GET", `/sessions/${sessionId}`);
    expect(session.body).toMatchObject({ system: "be \u0000 brief", metadata: { tag: "x\u0000y" } });

    server.upstream.enqueue({ text: "got \u0000 it" });
    const res = await server.request("POST", `/sessions/${sessionId}/runs?wait=true`, {
      body: { input: "\u0000 in \u0000 put \u0000" },
    });
    expect(res.status).toBe(200);
    expect(res.body.run.stopReason).toBe("complete");
    const sent = server.upstream.requests[0]?.body.messages;
    expect(sent).toEqual([
      { role: "system", content: expect.stringContaining("be \u0000 brief") },
      { role: "user", content: "\u0000 in \u0000 put \u0000" },
    ]);
    const history = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items;
    expect(history.map((m: { content: string }) => m.content)).toEqual([
      "\u0000 in \u0000 put \u0000",
      "got \u0000 it",
    ]);
  }, 60_000);
});
