/**
 * OPENAI_BASE_URL with user info (`https://user:pass@proxy/v1`, a common way to reach a model
 * behind a basic-auth proxy). The model client sends each request to the URL's origin and path
 * only, so the credentials never reach the upstream: every run fails with the upstream's 401
 * while the configuration looked accepted. A bad value must stop the start with exit code 2
 * naming the variable (the brief, README "Configuration"), as WEBHOOK_URL does for the same
 * form ("must not carry credentials (user:pass@): deliveries do not send them").
 */
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("OPENAI_BASE_URL carrying user:password@ is refused at start (exit 2, naming it, without the password) instead of being dropped from every request", async () => {
  const temp = tempDir("review-config-baseurl-");
  cleanups.push(temp.cleanup);
  const upstream: FakeUpstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  upstream.fallback = () => ({ text: "hello" });
  const withCredentials = upstream.baseURL.replace("http://", "http://proxyuser:proxy-pass-4242@");

  let started: Awaited<ReturnType<typeof startChildServer>> | null = null;
  let refusal = "";
  let exitCode: number | null = null;
  try {
    started = await startChildServer({
      dir: temp.path,
      upstreamURL: withCredentials,
      onSpawn: (child) => child.on("exit", (code) => (exitCode = code)),
    });
  } catch (err) {
    refusal = (err as Error).message;
  }
  if (started) {
    const server = started;
    cleanups.push(async () => {
      server.process.kill("SIGKILL");
      await server.exited;
    });
    // It started: show what became of the credentials.
    const session = await api(server.url, "POST", "/sessions", {});
    const run = await api(server.url, "POST", `/sessions/${session.body.id}/runs?wait=true`, { input: "hi" });
    const sent = upstream.requests.map((r) => r.headers.authorization);
    expect.fail(
      `the server started with credentials in OPENAI_BASE_URL; run ended ${run.body?.run?.status}/${run.body?.run?.stopReason}; the upstream received Authorization ${JSON.stringify(sent)} (no proxyuser:proxy-pass-4242)`,
    );
  }
  expect(refusal).toMatch(/OPENAI_BASE_URL/);
  expect(exitCode).toBe(2);
  expect(refusal).not.toContain("proxy-pass-4242");
});
