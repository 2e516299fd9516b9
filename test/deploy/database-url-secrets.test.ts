/**
 * DATABASE_URL in the message of a refused start: the password never shows, however it is
 * written (in the user info, unescaped, or as a query parameter), nor does any query parameter
 * that may carry a secret, nor any part of a URL that does not parse or whose user info is
 * ambiguous; and the password alone is one of the secrets redacted from logs and error texts.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, configSecrets } from "../../src/config.js";
import { displayDatabaseUrl } from "../../src/display-database-url.js";
import { secretRedactor } from "../../src/model/redact.js";
import { openPgStoreOrExplain } from "../../src/startup-checks.js";
import { freePort } from "../helpers/child-server.js";

const SECRET = "S3CRET-pw";

describe("DATABASE_URL as an error message shows it", () => {
  it("drops the password and the query parameters that may carry secrets, and says so", () => {
    const cases: [string, string][] = [
      [`postgres://agent:${SECRET}@db.internal:5432/agent`, "postgres://agent@db.internal:5432/agent"],
      [`postgres://agent@h/db?password=${SECRET}`, "postgres://agent@h/db (1 other query parameter not shown)"],
      [`postgres://agent:p@ss${SECRET}@h/db`, "postgres://agent@h/db"],
      [`postgres://agent:x:y${SECRET}@h/db`, "postgres://agent@h/db"],
      [
        `postgresql://agent@h/db?sslmode=require&sslpassword=${SECRET}&sslkey=/k/${SECRET}.key&options=-c%20x`,
        "postgresql://agent@h/db?sslmode=require (3 other query parameters not shown)",
      ],
      [`postgres://agent@h/db?host=/run/pg#${SECRET}`, "postgres://agent@h/db?host=%2Frun%2Fpg"],
    ];
    for (const [url, shown] of cases) expect(displayDatabaseUrl(url), url).toBe(shown);
  });

  it("a URL that does not parse shows its scheme only", () => {
    for (const url of [
      `postgres://agent:pa/ss${SECRET}@h/db`,
      `postgres://agent:pa#ss${SECRET}@h/db`,
      `postgres://agent:${SECRET} x@h:port/db`,
    ]) {
      expect(displayDatabaseUrl(url), url).toBe("postgres://(not shown: it cannot be parsed as a URL)");
    }
    expect(displayDatabaseUrl(`${SECRET}://x:y@`)).toBe("(not shown: it cannot be parsed as a URL)");
  });

  it("a URL with a / ? or # before its last @ shows its scheme only: where the password ends cannot be told", () => {
    for (const url of [
      `postgres://agent:/${SECRET}@h:5432/db`,
      `postgres://agent:2024/${SECRET}@h/db`,
      `postgres://agent:12?host=${SECRET}@h/db`,
      `postgres://agent:p@ss/${SECRET}@h/db`,
      `postgres://agent:p@ss#${SECRET}@h/db`,
    ]) {
      expect(displayDatabaseUrl(url), url).toBe(
        "postgres://(not shown: where its user name and password end cannot be told)",
      );
    }
  });

  it("an @ in a query value, after the user info or with no password before it, is ordinary: the URL is shown", () => {
    const cases: [string, string][] = [
      [
        `postgres://agent:${SECRET}@h/db?application_name=agent-server@eu-1`,
        "postgres://agent@h/db?application_name=agent-server%40eu-1",
      ],
      [`postgres://agent@h/db?user=alice@example.com`, "postgres://agent@h/db (1 other query parameter not shown)"],
      [`postgres://h/db?application_name=a@b`, "postgres://h/db?application_name=a%40b"],
    ];
    for (const [url, shown] of cases) expect(displayDatabaseUrl(url), url).toBe(shown);
  });

  it("its password alone, however it is written, is among the secrets logs and upstream errors never show", () => {
    for (const [url, password] of [
      [`postgres://agent:${SECRET}@h/db`, SECRET],
      [`postgres://agent:2024/${SECRET}@h/db`, `2024/${SECRET}`],
      [`postgres://agent:p%40ss${SECRET}@h/db`, `p@ss${SECRET}`],
      [`postgres://agent@h/db?password=${SECRET}`, SECRET],
      [`postgres://agent@h/db?sslmode=require&sslpassword=p%2Bss${SECRET}`, `p+ss${SECRET}`],
      [`postgres://agent@h/db?password=p+ss${SECRET}`, `p+ss${SECRET}`],
      [`postgres://agent@h/db?password=p+ss${SECRET}`, `p ss${SECRET}`],
      [`postgres://agent:pa/ss@h/db?password=${SECRET}`, SECRET],
    ] as const) {
      const secrets = configSecrets({ AGENT_API_KEYS: [], WEBHOOK_SECRET: "", DATABASE_URL: url, model: {} });
      expect(secretRedactor(secrets)(`password ${password}.`), url).toBe("password [redacted].");
    }
  });

  it("a start that cannot connect names DATABASE_URL without any of the secret", async () => {
    const port = await freePort();
    const refusals: string[] = [];
    for (const url of [
      `postgres://agent@127.0.0.1:${port}/agent?password=${SECRET}`,
      `postgres://agent:p@ss${SECRET}@127.0.0.1:${port}/agent`,
      `postgres://agent:pa/ss${SECRET}@127.0.0.1:${port}/agent`,
    ]) {
      const refused = await openPgStoreOrExplain(url).then(
        () => null,
        (err: unknown) => err,
      );
      expect(refused, url).toBeInstanceOf(ConfigError);
      refusals.push((refused as ConfigError).message);
    }
    expect(refusals[0]).toMatch(/DATABASE_URL: cannot use postgres:\/\/agent@127\.0\.0\.1:\d+\/agent .*ECONNREFUSED/);
    expect(refusals[1]).toMatch(/DATABASE_URL: cannot use postgres:\/\/agent@127\.0\.0\.1:\d+\/agent: .*ECONNREFUSED/);
    expect(refusals[2]).toMatch(/DATABASE_URL: cannot use postgres:\/\/\(not shown.*percent-encode/);
    for (const message of refusals) {
      expect(message).not.toContain(SECRET);
      expect(message).not.toMatch(/\bss\b|pa\/ss/);
    }
  });
});
