/**
 * The DATABASE_URL password is redacted "alone" from upstream error texts only when it is
 * written in the URL's user info; written as the `password` query parameter (which node-pg and
 * libpq accept, and which README's own examples of secret-carrying parameters and
 * test/deploy/database-url-secrets.test.ts treat as "the password"), it is not.
 *
 * README (Security, "Secrets stay out of texts and logs"): error texts quoting the model
 * upstream (a run's `error` and `stopDetail`, its steps, its `run.finished` event, and so
 * webhooks and traces) and every log line have "... `DATABASE_URL` (whole, and its password
 * alone) replaced by `[redacted]`". An upstream quotes the request in its 400s, and a
 * conversation may hold the database password (a `.env` file the model read, a pasted line).
 *
 * With DATABASE_URL=postgres://agent@host/db?password=<pw>, configSecrets (src/config-secrets.ts)
 * gets the password candidates from databaseUrlPasswords (src/display-database-url.ts), which
 * only looks at the user info (`URL.password` and the text after the first `:` before the last
 * `@`): the query parameter's value is never added, so the password alone reaches the run's
 * error, stop detail and events in clear (the whole URL is redacted, but the password alone is
 * not a long enough prefix of it).
 *
 * Expected: the password is `[redacted]`, as it is when written `postgres://agent:<pw>@host/db`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const PASSWORD = "Db-pw-7Rq2Lm9Xv4Kz";

let server: TestServer | undefined;
let database: TestPgDatabase | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await database?.drop();
  database = undefined;
});

describe("a server whose DATABASE_URL gives the password as a query parameter", () => {
  it("shows an upstream error quoting that password with the password [redacted]", async () => {
    database = await createTestPgDatabase();
    // The suite's PostgreSQL trusts local connections: the password is taken and not needed.
    const url = `${database.url}${database.url.includes("?") ? "&" : "?"}password=${PASSWORD}`;
    server = await startTestServer({ pgUrl: url, env: { DATABASE_URL: url } });
    // The password really is the store's: the server works on this very URL.
    server.upstream.enqueue({
      status: 400,
      errorBody: {
        error: {
          message: `Invalid content in messages[1]: 'DATABASE_PASSWORD=${PASSWORD} ...'`,
          type: "invalid_request_error",
        },
      },
    });
    const session = await server.request("POST", "/sessions", { body: {} });
    expect(session.status).toBe(201);
    const started = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      body: { input: "why does the app not connect? here is my .env" },
    });
    const run = started.body.run;
    expect(run.stopReason).toBe("error");
    expect(run.error.message).toMatch(/Invalid content in messages\[1\]/);
    const events = await fetch(`${server.url}/runs/${run.id}/events`).then((r) => r.text());
    const finished = events.split("\n\n").find((frame) => frame.includes("event: run.finished")) ?? "";
    expect(finished).toMatch(/run\.finished/);
    for (const [where, text] of [
      ["run error", JSON.stringify(run.error)],
      ["stop detail", String(run.stopDetail)],
      ["run.finished event", finished],
    ] as const) {
      expect(text, where).not.toContain(PASSWORD);
    }
    expect(run.error.message).toContain("[redacted]");
  });
});
