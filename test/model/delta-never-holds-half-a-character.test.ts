/**
 * An upstream may split one character between two chunks (an emoji's surrogate pair as
 * "\ud83d" then "\ude00": both valid JSON escapes). No text.delta event carries half of it:
 * a lone surrogate is not text (strict JSON parsers refuse its escape, and a client writing the
 * delta alone prints U+FFFD). The character is passed on whole, with its pair.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

it("a surrogate pair split between two chunks reaches the run's deltas whole", async () => {
  server.upstream.enqueue({ text: ["Hi \ud83d", "\ude00 there"] });
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  const run = (await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "hello" } }))
    .body.run;
  expect(run.stopReason).toBe("complete");
  const stream = await fetch(`${server.url}/runs/${run.id}/events`).then((r) => r.text());
  const deltas = stream
    .split("\n")
    .filter((line) => line.startsWith("data:") && line.includes('"text.delta"'))
    .map((line) => JSON.parse(line.slice("data:".length)).text as string);
  expect(deltas.join("")).toBe("Hi \u{1f600} there");
  // Each delta is whole text: no lone surrogate in any of them.
  expect(deltas.filter((text) => /[\uD800-\uDFFF]/u.test(text))).toEqual([]);
});
