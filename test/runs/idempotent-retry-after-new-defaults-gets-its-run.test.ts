/**
 * openapi.yaml: "a retried request (same key, same session, same body: input, maxTurns, ...) is
 * answered as the first one was (201 with the run it started, Idempotent-Replayed: true)". A
 * client retries a start whose answer it lost, with the very same body (no maxTurns in it),
 * after the server restarted with another DEFAULT_MAX_TURNS (a redeploy; or, over PostgreSQL,
 * the retry reaching an instance of the next release during a rolling upgrade). The retry is
 * compared by what the client sent: a field it leaves out matches whatever default its run took,
 * so it gets its run back. (It used to be refused 409 IDEMPOTENCY_KEY_REUSED, differs [maxTurns]:
 * the retry was compared by the values the server's defaults resolved.)
 */
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close().catch(() => {});
});

it("a start retried with its Idempotency-Key and the same body after a restart with another DEFAULT_MAX_TURNS gets its run back", async () => {
  const first = await startTestServer({ env: { DEFAULT_MAX_TURNS: "20" } });
  servers.push(first);
  first.upstream.enqueue({ text: "hello" });
  const session = (await first.request("POST", "/sessions", { body: {} })).body.id as string;
  const request = { body: { input: "say hello" }, headers: { "idempotency-key": "start-1" } };
  const started = await first.request("POST", `/sessions/${session}/runs`, request);
  expect(started.status).toBe(201);
  await finishedRun(first, started.body.id);
  await first.close({ keepDir: true });
  servers.pop();

  const again = await startTestServer({ dir: first.dir, upstream: first.upstream, env: { DEFAULT_MAX_TURNS: "30" } });
  servers.push(again);
  const retried = await again.request("POST", `/sessions/${session}/runs`, request);
  expect({
    status: retried.status,
    id: retried.body.id ?? retried.body.error,
    replayed: retried.headers.get("idempotent-replayed"),
  }).toEqual({ status: 201, id: started.body.id, replayed: "true" });
});
