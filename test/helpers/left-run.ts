import type { FakeUpstream } from "../fakes/openai-upstream.js";
import { startTestServer } from "./test-server.js";
import { until } from "./until.js";

/**
 * A run left live by a previous process: a server started, a run begun mid model stream (its
 * answer never comes), then the server shut down suspending it (as a crash leaves it). Its
 * data directory is kept for the next server, which recovers the run.
 */
export async function runLeftLive(upstream: FakeUpstream): Promise<{ dir: string; sessionId: string; runId: string }> {
  const first = await startTestServer({ upstream });
  upstream.enqueue({ text: "never finished", gate: new Promise(() => {}) });
  const sessionId = (await first.request("POST", "/sessions", { body: {} })).body.id as string;
  const run = (await first.request("POST", `/sessions/${sessionId}/runs`, { body: { input: "go" } })).body;
  await until(
    async () => upstream.requests.length,
    (n) => n === 1,
    "the model request",
  );
  await first.close({ keepDir: true, resume: true });
  return { dir: first.dir, sessionId, runId: run.id as string };
}
