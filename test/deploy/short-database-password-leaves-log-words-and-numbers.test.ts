/**
 * A DATABASE_URL password that may be an ordinary word or number (`postgres`, `1234`) is not
 * redacted on its own from log lines and upstream error texts: redacted wherever it appears, in
 * any letter case, it replaced the word "postgres" in every line, and digits inside numbers
 * (a duration, an id), making the line invalid JSON. The whole URL is still redacted; a password
 * of at least 8 characters mixing letters, digits or signs (or of at least 16) is redacted alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { configSecrets } from "../../src/config.js";
import { secretRedactor } from "../../src/model/redact.js";
import { capturedLogs } from "../helpers/captured-logs.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
let database: TestPgDatabase | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await database?.drop();
  database = undefined;
});

function secretsOf(url: string): string[] {
  return configSecrets({ AGENT_API_KEYS: [], WEBHOOK_SECRET: "", DATABASE_URL: url, model: {} });
}

/** `url` with `password` in its user info. */
function withPassword({ url, password }: { url: string; password: string }): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.toString();
}

describe("a server whose DATABASE_URL password is short or plain", () => {
  for (const password of ["postgres", "1234"]) {
    it(`logs lines that all parse as JSON and keep ordinary words and numbers (password ${password})`, async () => {
      database = await createTestPgDatabase();
      // The suite's PostgreSQL trusts local connections: the password is taken and not needed.
      const url = withPassword({ url: database.url, password });
      const { lines, logger } = capturedLogs({ secrets: secretsOf(url) });
      server = await startTestServer({ pgUrl: url, env: { DATABASE_URL: url }, logger });
      for (let i = 0; i < 5; i++) expect((await server.request("POST", "/sessions", { body: {} })).status).toBe(201);
      logger.info({ store: "postgres", count: 912345, elapsedMs: 0.123412341234 }, "Postgres store in use");
      logger.info({ databaseUrl: url }, "the whole URL");

      const parsed = lines.map((line) => JSON.parse(line));
      const ours = parsed.find((line) => line.msg === "Postgres store in use");
      expect(ours).toMatchObject({ store: "postgres", count: 912345, elapsedMs: 0.123412341234 });
      // The server's own request lines, each with its duration in ms and ids made of digits.
      const requests = parsed.filter((line) => line.msg === "request");
      expect(requests.length).toBeGreaterThanOrEqual(5);
      for (const line of requests) expect(typeof line.ms).toBe("number");
      expect(parsed.find((line) => line.msg === "the whole URL")?.databaseUrl).toBe("[redacted]");
      expect(lines.join("")).not.toContain(url);
    });
  }

  it("a password alone of at least 8 characters mixing kinds, or of 16, is still redacted; a plain short one is not", () => {
    const redact = (url: string, text: string): string => secretRedactor(secretsOf(url))(text);
    expect(redact("postgres://agent:Tr0ub4dor@h/db", "pw Tr0ub4dor.")).toBe("pw [redacted].");
    expect(redact("postgres://agent:correcthorsebattery@h/db", "pw correcthorsebattery.")).toBe("pw [redacted].");
    expect(redact("postgres://agent:9876543210123456@h/db", "pw 9876543210123456.")).toBe("pw [redacted].");
    expect(redact("postgres://agent@h/db?password=Tr0ub4dor", "pw Tr0ub4dor.")).toBe("pw [redacted].");
    expect(redact("postgres://agent:password@h/db", "the password is wrong")).toBe("the password is wrong");
    expect(redact("postgres://agent:20242024@h/db", '{"time":1720242024123}')).toBe('{"time":1720242024123}');
    expect(redact("postgres://agent:s3cr@h/db", "s3cr")).toBe("s3cr");
    expect(redact("postgres://agent:s3cr@h/db", "postgres://agent:s3cr@h/db")).toBe("[redacted]");
  });
});
