/**
 * The client's exit code for a 503 is the one README's table gives: 69 (retry later) for a state
 * that passes by itself (SHUTTING_DOWN, STORAGE_UNAVAILABLE, TOO_MANY_CONNECTIONS, each sent with
 * Retry-After), 70 for any other: WORKSPACE_ROOT_MOVED needs its operator (retrying does not
 * mend it), and a proxy's 503 without the server's error is no agent server's answer. Before,
 * every 503 exited 69.
 */
import { renameSync, symlinkSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli-process.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.map((close) => close()));
  closers = [];
});

/** A server answering every request 503 with `body` (JSON when an object) and `headers`. */
async function answering503(body: object | string, headers: Record<string, string> = {}): Promise<string> {
  const server: Server = createServer((request, response) => {
    request.resume();
    const json = typeof body === "object";
    response.writeHead(503, { "content-type": json ? "application/json" : "text/html", ...headers });
    response.end(json ? JSON.stringify(body) : body);
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  closers.push(() => new Promise((closed) => server.close(() => closed())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const envelope = (code: string) => ({ error: { code, message: `${code.toLowerCase()} now` } });

describe("agent-server run against a server answering 503", () => {
  it("exits 69 for a 503 that passes, saying when to retry", async () => {
    const codes = ["SHUTTING_DOWN", "STORAGE_UNAVAILABLE", "TOO_MANY_CONNECTIONS"];
    const results = await Promise.all(
      codes.map(async (code) => {
        const url = await answering503(envelope(code), { "retry-after": "5" });
        const { code: exit, stderr } = await runCli({ args: ["run", "Hello"], env: { AGENT_URL: url } });
        return { exit, stderr };
      }),
    );
    expect(results).toEqual(
      codes.map((code) => ({
        exit: 69,
        stderr: `agent-server: the server cannot take this request now (503 ${code}: ${code.toLowerCase()} now): retry in 5 s\n`,
      })),
    );
  });

  it("exits 70 for WORKSPACE_ROOT_MOVED from a real server whose root was moved and linked back, giving its reason", async () => {
    const server: TestServer = await startTestServer();
    closers.push(() => server.close());
    const root = join(server.dir, "workspaces");
    const moved = join(server.dir, "moved-volume");
    renameSync(root, moved);
    symlinkSync(moved, root);
    const result = await runCli({ args: ["run", "Hello"], env: { AGENT_URL: server.url } });
    expect(result.stderr).toMatch(
      /^agent-server: POST \/sessions was refused \(503 WORKSPACE_ROOT_MOVED: WORKSPACE_ROOT now resolves .* must be restarted to use the new one\)\n$/,
    );
    expect(result.code).toBe(70);
  });

  it("exits 70 for a proxy's 503 without the server's error", async () => {
    const url = await answering503("<html><body>503 Service Unavailable</body></html>");
    const result = await runCli({ args: ["run", "Hello"], env: { AGENT_URL: url } });
    expect(result.stderr).toMatch(/a proxy in front of .* found its server away or too slow\n$/);
    expect(result.code).toBe(70);
  });
});
