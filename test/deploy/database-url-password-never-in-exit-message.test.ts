/**
 * Bug: the exit-2 message of a start refused for DATABASE_URL prints the database password.
 *
 * README (DATABASE_URL): a database that cannot be used "stops the server with exit code 2,
 * naming `DATABASE_URL` (without its password)". displayDatabaseUrl only strips `URL.password`,
 * and assumes a URL that does not split at the user's password does not parse. But a password
 * with an unescaped `/`, `?` or `#` whose part before it is empty or all digits (`/…`, `2024/…`:
 * random base64 passwords start with `/` one time in 64) *does* parse, differently: the user
 * name becomes the host, the password's start the port, and the rest of the password (and the
 * real host) the path. Nothing is then in `URL.password`, so the message shows the password in
 * clear, on stderr, in every container log. Expected: no part of the password in the message
 * (the URL shown by its scheme only, or without what follows the authority, as for other URLs
 * that do not split where the server expects).
 */
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startRefused } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const SECRET = "Zq8SECRETpw";
const dir = tempDir("review-leak-dburl-");
afterAll(() => dir.cleanup());

describe("a start refused for DATABASE_URL", () => {
  it("never prints the password, also one with an unescaped / after an empty or numeric start", async () => {
    const port = await freePort();
    for (const password of [`/${SECRET}`, `2024/${SECRET}`]) {
      const refused = startRefused(dir.path, {
        DATABASE_URL: `postgres://agent:${password}@127.0.0.1:${port}/agent`,
      });
      expect(refused.status, refused.output).toBe(2);
      expect(refused.output).toMatch(/DATABASE_URL/);
      expect(refused.output, `password ${password}`).not.toContain(SECRET);
    }
  });
});
