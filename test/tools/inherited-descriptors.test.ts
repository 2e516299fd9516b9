import { closeSync, constants, mkdirSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * The server started by a launcher that left a directory open (a supervisor, a shell script's
 * `exec 40<…`, a parent process's extra descriptor): descriptor 40, not close-on-exec. Node
 * marks inherited descriptors close-on-exec only up to the first unused one above 15, so 40
 * stayed open in the server and every shell command inherited it, sandbox included: through
 * /proc/self/fd/40 an unapproved `shell_readonly` read a directory of the host outside its
 * sandbox. The server now closes such descriptors at start and says so in its log.
 */
const SECRET = "HOST-SECRET-OUTSIDE-THE-SANDBOX";
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("descriptors the server inherited open", () => {
  it("are closed at start: a sandboxed command cannot reach the host through one", async () => {
    const temp = tempDir("inherited-fd-");
    cleanups.push(temp.cleanup);
    const outside = join(temp.path, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "secret.txt"), SECRET);
    const dir = join(temp.path, "server");
    mkdirSync(dir);
    const upstream: FakeUpstream = await startFakeUpstream();
    cleanups.push(() => upstream.close());
    const leaked = openSync(outside, constants.O_RDONLY | constants.O_DIRECTORY);
    cleanups.push(() => closeSync(leaked));
    const stdio = [
      ...Array.from({ length: 40 }, (_, fd) => (fd === 0 ? "ignore" : fd < 3 ? "pipe" : "ignore")),
      leaked,
    ];
    const server: ChildServer = await startChildServer({
      dir,
      upstreamURL: upstream.baseURL,
      env: { SHELL_SANDBOX: "bwrap", LOG_LEVEL: "warn" },
      stdio: stdio as ("ignore" | "pipe" | number)[],
    });
    cleanups.push(async () => {
      server.process.kill("SIGKILL");
      await server.exited;
    });
    upstream.enqueue(
      {
        toolCalls: [
          {
            id: "call_fd",
            name: "shell_readonly",
            arguments: JSON.stringify({ command: "cat /proc/self/fd/40/secret.txt; ls -l /proc/self/fd" }),
          },
        ],
      },
      { text: "done" },
    );
    const session = await api(server.url, "POST", "/sessions", {});
    const run = await api(server.url, "POST", `/sessions/${session.body.id}/runs?wait=true`, { input: "look" });
    expect(run.body.run).toMatchObject({ status: "finished" });
    const messages = await api(server.url, "GET", `/sessions/${session.body.id}/messages`);
    const result = messages.body.items.find((m: { role: string }) => m.role === "tool");
    expect(result.content).not.toContain(SECRET);
    expect(result.content).toMatch(/No such file or directory/);
    expect(server.output()).toMatch(/closed descriptors the server inherited open/);
  });
});
