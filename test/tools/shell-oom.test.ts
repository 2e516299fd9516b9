import { afterEach, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, type ChildServer, startChildServer } from "../helpers/child-server.js";
import { makeMemoryCgroup } from "../helpers/memory-cgroup.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * A command that takes more memory than the host has, attacked as a model would: the built
 * server runs in a memory cgroup of LIMIT bytes (the host, as far as the kernel's OOM killer
 * is concerned), and one shell call starts HOGS processes that each hold HOG_MIB MiB, together
 * well past the limit, each smaller than the server. The OOM killer kills the process that
 * scores highest, by default the one with the most memory: the server, were the command's
 * processes not marked as the first to go. The server must live on and finish the run.
 */
const LIMIT = 160 * 1024 * 1024;
const HOGS = 12;
const HOG_MIB = 24;
const hogs =
  `i=0; while [ $i -lt ${HOGS} ]; do dd if=/dev/zero bs=${HOG_MIB}M count=1 2>/dev/null | sleep 2 & i=$((i+1)); done; ` +
  "wait; echo hogs-done";

const probe = makeMemoryCgroup(1);
const unavailable = "unavailable" in probe ? probe.unavailable : null;
if (!("unavailable" in probe)) await probe.remove();

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(env: Record<string, string>): Promise<{ server: ChildServer; upstream: FakeUpstream }> {
  const temp = tempDir("shell-oom-");
  cleanups.push(temp.cleanup);
  const upstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const server = await startChildServer({ dir: temp.path, upstreamURL: upstream.baseURL, env });
  cleanups.push(async () => {
    server.process.kill("SIGKILL");
    await server.exited;
  });
  return { server, upstream };
}

describe.skipIf(unavailable !== null)(`a shell command out of memory (${unavailable ?? "cgroup v1"})`, () => {
  it.each([
    { sandbox: "bwrap", tool: "shell_readonly" },
    { sandbox: "off", tool: "shell" },
  ])(
    "SHELL_SANDBOX=$sandbox: the OOM killer kills the command's processes, never the server",
    async ({ sandbox, tool }) => {
      const { server, upstream } = await start({ SHELL_SANDBOX: sandbox });
      const cgroup = makeMemoryCgroup(LIMIT);
      if ("unavailable" in cgroup) throw new Error(cgroup.unavailable);
      cleanups.push(() => cgroup.remove());
      cgroup.add(server.pid);
      upstream.enqueue(
        { toolCalls: [{ id: "call_hogs", name: tool, arguments: JSON.stringify({ command: hogs }) }] },
        { text: "done" },
      );
      const session = await api(server.url, "POST", "/sessions", { approval: { tools: { [tool]: "allow" } } });
      const run = await api(server.url, "POST", `/sessions/${session.body.id}/runs?wait=true`, {
        input: "take memory",
      });

      // The attack did take the cgroup out of memory.
      expect(cgroup.oomKills()).toBeGreaterThan(0);
      expect(server.process.exitCode, server.output()).toBeNull();
      expect(server.process.signalCode, server.output()).toBeNull();
      expect(run.body.run).toMatchObject({ status: "finished", stopReason: "complete" });
      expect((await api(server.url, "GET", "/healthz")).status).toBe(200);
      const messages = await api(server.url, "GET", `/sessions/${session.body.id}/messages`);
      const result = messages.body.items.find((m: { role: string }) => m.role === "tool");
      expect(result.content).toMatch(/hogs-done/);
    },
    60_000,
  );
});
