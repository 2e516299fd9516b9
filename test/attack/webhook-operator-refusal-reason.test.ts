import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";
import { WEBHOOK_SECRET } from "../helpers/webhook-receiver.js";

/**
 * With API keys, the operator's own receiver (WEBHOOK_URL) is hidden from the keys: a
 * delivery to it is listed with `url: null` and its tries' error texts replaced, as they name
 * its host or address (run-service.ts). An operator whose WEBHOOK_URL names a host that
 * resolves to a private address (a misconfiguration the server starts with: only literal
 * addresses are refused at start) has every delivery refused at send time, and the refusal's
 * `reason` names the host and the internal address it resolves to: that is replaced too.
 */
const KEY = "key-a-0123456789abcdef";
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("a refused operator receiver's host and internal address are not shown to API keys in `reason`", async () => {
  const operatorHost = "localhost";
  server = await startTestServer({
    env: {
      AGENT_API_KEYS: KEY,
      WEBHOOK_SECRET,
      WEBHOOK_URL: `http://${operatorHost}:9/hooks/opaque-token-123`,
      WEBHOOK_POLL_MS: "20",
    },
  });
  const as = { authorization: `Bearer ${KEY}` };
  server.upstream.enqueue({ text: "done" });
  const session = (await server.request("POST", "/sessions", { body: {}, headers: as })).body;
  const run = (
    await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hi" }, headers: as })
  ).body.run;
  let items: { url: string | null; status: string; reason: string | null; attempts: { error: string | null }[] }[] = [];
  items = await until(
    async () => (await server?.request("GET", `/runs/${run.id}/webhooks`, { headers: as }))?.body.items,
    (list: typeof items) => list.length > 0 && list.every((d) => d.status === "failed"),
    "the delivery to be refused",
  );
  // The URL and the tries' errors are hidden, as documented...
  expect(items[0]?.url).toBeNull();
  expect(items[0]?.attempts.map((a) => a.error)).toEqual(["the operator's receiver was not reached"]);
  // ...and so is the refusal's reason, which names the operator's host and the address it resolves to.
  expect(items[0]?.reason).toBe("the operator's receiver was refused");
  expect(JSON.stringify(items)).not.toContain(operatorHost);
  expect(JSON.stringify(items)).not.toContain("127.0.0.1");
});
