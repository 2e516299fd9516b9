/**
 * A JSON body with a key named `__proto__`, or a `constructor` object with a `prototype` key, is
 * valid JSON the server refuses (prototype poisoning): the answer says so, as the spec
 * documents (400 INVALID_BODY), rather than calling the body invalid JSON.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../contract/support.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const post = async (rawBody: string) => {
  const answer = await call(server, "POST", "/sessions", { rawBody, contentType: "application/json" });
  return { status: answer.status, code: answer.body?.error?.code, message: answer.body?.error?.message };
};

describe("a JSON body with prototype keys", () => {
  it("a key named __proto__ is refused INVALID_BODY, naming it", async () => {
    expect(await post('{"metadata":{"__proto__":{"isAdmin":true}}}')).toEqual({
      status: 400,
      code: "INVALID_BODY",
      message: expect.stringContaining("__proto__"),
    });
  });

  it("a constructor object with a prototype key is refused INVALID_BODY, naming it", async () => {
    expect(await post('{"metadata":{"constructor":{"prototype":{"isAdmin":true}}}}')).toEqual({
      status: 400,
      code: "INVALID_BODY",
      message: expect.stringContaining("constructor.prototype"),
    });
  });

  it("a body that does not parse is still INVALID_JSON", async () => {
    expect(await post('{"metadata":')).toMatchObject({ status: 400, code: "INVALID_JSON" });
  });

  it("a constructor key without a prototype key is accepted", async () => {
    expect(await post('{"metadata":{"constructor":"x"}}')).toMatchObject({ status: 201 });
  });
});
