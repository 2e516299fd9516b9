/**
 * A loop_detected stopDetail quotes the looping call's arguments cut to 80 characters
 * (src/agent/stop-detail.ts, excerpt), counted in UTF-16 code units: when the cut falls
 * inside a character outside the BMP (an emoji, a CJK extension ideograph), the sentence
 * ends the excerpt with half of a surrogate pair.
 *
 * Seen from outside, the same run then tells two different stories: `GET /runs/{id}` (read back
 * from the store, which replaces the lone surrogate) shows U+FFFD, while the `run.finished`
 * event (serialized from the in-memory view) carries `\ud83d`, an unpaired surrogate escape
 * that is not Unicode text at all: strict JSON decoders (Rust's serde_json, for one) reject the
 * whole event, and a webhook of it likewise. The README says committed text never keeps a lone
 * surrogate; a stop detail is "one sentence" for a person and should hold only whole characters.
 *
 * Expected: the excerpt is cut on a character boundary, so the stop detail is well-formed
 * Unicode and identical in the run view and in its run.finished event.
 */
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { finishedRun } from "../helpers/until.js";

let server: TestServer;
afterEach(async () => {
  await server?.close();
});

it("a loop_detected stopDetail quoting arguments with an emoji at the cut is well-formed and the same in GET /runs/{id} and run.finished", async () => {
  server = await startTestServer();
  const session = (await server.request("POST", "/sessions", {})).body;
  // Canonical arguments `{"path":"aaa...😀bbbbbb.txt"}`: the emoji's high surrogate is the 77th code unit.
  const path = `${"a".repeat(67)}😀bbbbbb.txt`;
  const readMissing = (id: string) => ({ toolCalls: [{ id, name: "read_file", arguments: JSON.stringify({ path }) }] });
  server.upstream.enqueue(readMissing("call_1"), readMissing("call_2"), readMissing("call_3"));
  const run = (await server.request("POST", `/sessions/${session.id}/runs`, { body: { input: "read it" } })).body;

  const view = await finishedRun(server, run.id);
  expect(view.stopReason).toBe("loop_detected");
  expect(view.stopDetail).toMatch(/^stopped after turn 3: read_file \{"path":"a+/);

  const stream = await fetch(`${server.url}/runs/${run.id}/events`).then((r) => r.text());
  const finishedLine = stream.split("\n").find((line) => line.startsWith("data:") && line.includes('"run.finished"'));
  expect(finishedLine).toBeDefined();
  const eventDetail: string = JSON.parse((finishedLine as string).slice("data:".length)).run.stopDetail;

  expect({ wellFormed: !/[\uD800-\uDFFF]/u.test(eventDetail), sameAsView: eventDetail === view.stopDetail }).toEqual({
    wellFormed: true,
    sameAsView: true,
  });
});
