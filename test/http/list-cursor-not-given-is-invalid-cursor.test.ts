/**
 * openapi.yaml, `components.parameters.Cursor`: "The `nextCursor` of the previous page; anything
 * else is `400 INVALID_CURSOR`." `GET /sessions/{id}/messages`: "the cursor is the `seq` of the
 * last message of the previous page; anything else is `400 INVALID_CURSOR`". The README: "cursors
 * are opaque: pass `nextCursor` back as it is".
 *
 * A cursor the API never gave was INVALID_CURSOR when it was 1 to 64 characters long, but an empty
 * `cursor=` or one of 65 characters or more was answered 400 VALIDATION_FAILED instead (the
 * parameter's zod schema, min 1 / max 64, runs first): a client that tells "my cursor is stale
 * or corrupt, start over" by the documented code missed those. Now every one is INVALID_CURSOR.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

describe("a list cursor the API did not give", () => {
  let server: TestServer;
  let session: string;
  beforeAll(async () => {
    server = await startTestServer();
    session = (await server.request("POST", "/sessions", { body: {} })).body.id;
  });
  afterAll(() => server?.close());

  it("is 400 INVALID_CURSOR whatever its length, as the Cursor parameter documents", async () => {
    const answers: unknown[] = [];
    for (const path of ["/sessions", `/sessions/${session}/runs`, `/sessions/${session}/messages`]) {
      for (const cursor of ["zzz", "", "9".repeat(65)]) {
        const res = await server.request("GET", `${path}?cursor=${cursor}`);
        answers.push({ path, cursor: cursor.length, status: res.status, code: res.body?.error?.code });
      }
    }
    const expected = [];
    for (const path of ["/sessions", `/sessions/${session}/runs`, `/sessions/${session}/messages`]) {
      for (const length of [3, 0, 65]) expected.push({ path, cursor: length, status: 400, code: "INVALID_CURSOR" });
    }
    expect(answers).toEqual(expected);
  });
});
