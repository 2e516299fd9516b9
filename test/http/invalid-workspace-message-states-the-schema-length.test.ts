/**
 * A shared workspace name the schema accepts in length but not in form is refused
 * INVALID_WORKSPACE with a message that states the same length as the schema (openapi.yaml and
 * the route's), not the longer one of the directory name it becomes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../contract/support.js";
import { spec } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

// biome-ignore lint/suspicious/noExplicitAny: the spec is read as plain data.
const workspaceSchema = (spec.components.schemas.CreateSessionRequest as any).properties.workspace;
const maxLength: number = workspaceSchema.maxLength;

describe("POST /sessions with an invalid workspace name", () => {
  it("INVALID_WORKSPACE's message states the schema's length, which the route enforces", async () => {
    const malformed = await call(server, "POST", "/sessions", { body: { workspace: "has space" } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe("INVALID_WORKSPACE");
    expect(malformed.body.error.message).toContain(`1-${maxLength} `);

    const longest = await call(server, "POST", "/sessions", { body: { workspace: "w".repeat(maxLength) } });
    expect(longest.status).toBe(201);
    const over = await call(server, "POST", "/sessions", { body: { workspace: "w".repeat(maxLength + 1) } });
    expect({ status: over.status, code: over.body.error.code }).toEqual({ status: 400, code: "VALIDATION_FAILED" });
  });
});
