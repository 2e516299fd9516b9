/**
 * `?wait=true` on a retry (the same Idempotency-Key) while the first request's run is stored but
 * not yet registered here: it answered at once with the run still `running`; it now answers when
 * the run ends. The window is widened by a slow history read.
 */
import { afterEach, expect, it } from "vitest";
import { aroundStore } from "../helpers/store-around.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("?wait=true on an idempotent retry answers once the run has finished", async () => {
  let slow = false;
  server = await startTestServer({
    wrapStore: (store) =>
      aroundStore(store, "messages", (name, _args, call) => {
        if (name === "history" && slow) {
          slow = false;
          return new Promise((r) => setTimeout(r, 400)).then(call);
        }
        return call();
      }),
  });
  const s = server;
  s.upstream.enqueue({ text: "hello" });
  const session = (await s.request("POST", "/sessions", { body: {} })).body;
  slow = true;
  const headers = { "idempotency-key": "k1" };
  const first = s.request("POST", `/sessions/${session.id}/runs`, { body: { input: "hi" }, headers });
  await until(
    async () => (await s.request("GET", `/sessions/${session.id}`)).body.activeRunId as string | null,
    (id) => !!id,
    "the run to be active",
  );
  const retry = await s.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" }, headers });
  await first;
  expect(retry.status).toBe(200);
  expect(retry.body.run.status).toBe("finished");
  expect(retry.body.text).toBe("hello");
});
