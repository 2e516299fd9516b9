/**
 * `AGENT_URL` is checked before anything is sent, and a URL holding credentials is refused
 * without echoing it ("AGENT_URL must not hold credentials: put the key in AGENT_API_KEY").
 * But when the same URL is refused for another reason first (it does not parse, e.g. a port
 * out of range or a typo; or its scheme is not http(s)), the message quotes the raw value,
 * password included: `agent-server: AGENT_URL is not a URL: "http://bob:s3cretpw@host:99999"`.
 * In a CI log, that prints the secret the user (wrongly) put in the URL, which the client's
 * own credentials check is careful never to do. Expected: whatever the reason, the refusal
 * (exit 65) never shows the user info of AGENT_URL (show it redacted, or not at all), as the
 * server does for DATABASE_URL.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli-process.js";

const SECRET = "s3cretpw-do-not-print";

describe("AGENT_URL refused for a reason other than its credentials", () => {
  const cases: [string, string][] = [
    ["a port out of range", `http://bob:${SECRET}@127.0.0.1:99999`],
    ["a scheme other than http(s)", `ftp://bob:${SECRET}@127.0.0.1/`],
    ["a space in the host", `http://bob:${SECRET}@exa mple.com/`],
  ];
  for (const [why, url] of cases) {
    it(`${why}: exits 65 without printing the password`, async () => {
      const result = await runCli({ args: ["run", "hello"], env: { AGENT_URL: url } });
      expect(result.code).toBe(65);
      expect(result.stderr).toContain("AGENT_URL");
      expect(result.stderr).not.toContain(SECRET);
      expect(result.stdout).not.toContain(SECRET);
    });
  }
});
