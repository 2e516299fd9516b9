/**
 * SHELL_NETWORK=1 gives sandboxed shell commands the host's network, and this server listens
 * on it (127.0.0.1). A command the model runs, as a prompt injection writes it (shell_readonly
 * needs no approval by default), calls the server's own API: without API keys it could approve
 * calls waiting for a person, or create a session that allows every tool and start runs in it.
 * Such a start is refused (exit 2 naming SHELL_NETWORK, AGENT_API_KEYS and ALLOW_UNAUTHENTICATED);
 * with keys the command reaches the API holding none (its environment is an allow-list): 401.
 */
import { afterAll, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer, startRefused } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const KEY = "key-shell-net-0123456789";
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("a server whose shell commands get the network refuses to start without API keys", () => {
  const temp = tempDir("shell-network-");
  cleanups.push(temp.cleanup);
  const refused = startRefused(temp.path, { SHELL_NETWORK: "1" });
  expect(refused.status, refused.output).toBe(2);
  expect(refused.output).toMatch(/SHELL_NETWORK: .*AGENT_API_KEYS.*ALLOW_UNAUTHENTICATED=1/);
});

it("with API keys, a model's shell_readonly command reaches the server's API with no key: 401", async () => {
  const temp = tempDir("shell-network-");
  cleanups.push(temp.cleanup);
  const upstream: FakeUpstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  const server: ChildServer = await startChildServer({
    dir: temp.path,
    upstreamURL: upstream.baseURL,
    env: { SHELL_NETWORK: "1", SHELL_SANDBOX: "bwrap", AGENT_API_KEYS: KEY },
  });
  cleanups.push(async () => {
    server.process.kill("SIGKILL");
    await server.exited;
  });
  // The injected command: make a session that allows every tool, through the server's own API.
  const command = `curl -s -o /dev/null -w 'status=%{http_code}' -X POST -H 'content-type: application/json' -d '{"approval":{"default":"allow"}}' ${server.url}/sessions`;
  upstream.fallback = (body) =>
    body.messages.some((m: { role: string }) => m.role === "tool")
      ? { text: "done" }
      : { toolCalls: [{ id: "call_net", name: "shell_readonly", arguments: JSON.stringify({ command }) }] };
  const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
  const session = await (await fetch(`${server.url}/sessions`, { method: "POST", headers, body: "{}" })).json();
  const run = await fetch(`${server.url}/sessions/${session.id}/runs?wait=true`, {
    method: "POST",
    headers,
    body: JSON.stringify({ input: "check the service" }),
  });
  expect((await run.json()).run.stopReason).toBe("complete");
  const messages = await (await fetch(`${server.url}/sessions/${session.id}/messages`, { headers })).json();
  const result = (messages.items as { role: string; content: string }[]).find((m) => m.role === "tool");
  expect(result?.content).toContain("status=401");
});
