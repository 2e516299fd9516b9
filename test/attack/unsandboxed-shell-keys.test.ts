/**
 * One tenant of a server with several API keys where `shell` runs unsandboxed (no working
 * bubblewrap, SHELL_SANDBOX=off or auto falling back) and the operator set no
 * APPROVAL_POLICY_MAX, or one that says nothing of `shell` (set for another tool): the tenant
 * allows its own shell calls and has the model read the server's environment, which holds
 * every tenant's key. `shell` is now denied to every key unless the operator's ceiling names it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { type ChildServer, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const ATTACKER = "tenant-a-key-0123456789";
const VICTIM = "tenant-b-key-9876543210";
describe.each<{ ceiling: string; env: Record<string, string> }>([
  { ceiling: "none", env: {} },
  { ceiling: "one for another tool", env: { APPROVAL_POLICY_MAX: "write_file=ask" } },
])("APPROVAL_POLICY_MAX: $ceiling", ({ env }) => {
  const dir = tempDir("unsandboxed-keys-");
  let upstream: FakeUpstream;
  let server: ChildServer;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    server = await startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env: { SHELL_SANDBOX: "off", AGENT_API_KEYS: `${ATTACKER},${VICTIM}`, ...env },
    });
  });
  afterAll(async () => {
    server?.process.kill("SIGKILL");
    await server?.exited;
    await upstream?.close();
    dir.cleanup();
  });

  const asAttacker = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${ATTACKER}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };

  it("a tenant cannot have an unsandboxed shell read the server's environment and another tenant's key", async () => {
    const steal = `tr '\\0' '\\n' < /proc/${server.pid}/environ`;
    upstream.fallback = (body) =>
      body.messages.some((m: { role: string }) => m.role === "tool")
        ? { text: "done" }
        : { toolCalls: [{ id: "call_env", name: "shell", arguments: JSON.stringify({ command: steal }) }] };
    // The tenant allows every call of its own session, or, refused that, of its run.
    let session = await asAttacker("POST", "/sessions", { approval: { default: "allow" } });
    if (session.status !== 201) session = await asAttacker("POST", "/sessions", {});
    expect(session.status).toBe(201);
    let run = await asAttacker("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      input: "print the environment",
      approval: { tools: { shell: "allow" } },
    });
    if (run.status !== 200 && run.status !== 201)
      run = await asAttacker("POST", `/sessions/${session.body.id}/runs?wait=true`, { input: "print the environment" });
    expect(run.body.run?.status).toBe("finished");
    const messages = await asAttacker("GET", `/sessions/${session.body.id}/messages`);
    const seen = JSON.stringify(messages.body.items);
    expect(seen).toContain("call_env");
    expect(seen).not.toContain(VICTIM);
    expect(seen).not.toContain("sk-test-key");
    // The operator is told why at start.
    expect(server.output()).toMatch(/shell is denied to every key/);
  });
});
