/**
 * A start refused because of an ordinary DATABASE_URL is explained with the server's reason,
 * even when the URL's query holds an `@` (an `application_name=agent-server@eu-1`, a
 * `user=alice@example.com` for a directory login, a certificate path with an `@`).
 *
 * This sitting's ambiguousUserInfo (src/display-database-url.ts) calls a URL ambiguous when a
 * `/`, `?` or `#` comes before its LAST `@`, wherever that `@` is: in an ordinary URL the path
 * `/db` and the `?` of the query come before an `@` in a query value. openPgStoreOrExplain
 * (src/startup-checks.ts) then replaces the driver's reason (here: the database does not exist)
 * with "its user name and password cannot be told from its host and database ...; percent-encode
 * @ : / ? # in the user name and password", and the URL is shown by its scheme only, though
 * this URL has no password at all and its user info is plain. The operator is told to fix what
 * is not broken and is not told what is.
 *
 * README (DATABASE_URL): "A database that cannot be used (authentication failed, database
 * missing, connection refused) stops the server with exit code 2, naming DATABASE_URL (without
 * its password) and the server's reason; a URL where a /, ? or # before the last @ leaves
 * unclear where the password ends is shown by its scheme only". Here nothing is unclear: the
 * user info ends at the first `@` after the scheme, before any `/`.
 *
 * Expected: the refusal names the database and the server's reason ("does not exist"), as it
 * does for the same URL without the `@` in its query.
 */
import { describe, expect, inject, it } from "vitest";
import { ConfigError } from "../../src/config.js";
import { openPgStoreOrExplain } from "../../src/startup-checks.js";
import { databaseUrl } from "../helpers/pg-cluster.js";

async function refusal(url: string): Promise<string> {
  const refused = await openPgStoreOrExplain(url).then(
    async (store) => {
      await store.close();
      return null;
    },
    (err: unknown) => err,
  );
  expect(refused, url).toBeInstanceOf(ConfigError);
  return (refused as ConfigError).message;
}

describe("DATABASE_URL naming a missing database, with an @ in a query parameter", () => {
  it("is refused with the server's reason, not with advice to percent-encode its password", async () => {
    const missing = databaseUrl(inject("pgServerUrl"), "agent_review_missing_db");
    const join = missing.includes("?") ? "&" : "?";

    // Without the @: the server's reason, as README says.
    const plain = await refusal(`${missing}${join}application_name=agent-server-eu-1`);
    expect(plain).toMatch(/agent_review_missing_db/);
    expect(plain).toMatch(/does not exist/);

    // The same URL with an @ in a query value: same database, same reason.
    const withAt = await refusal(`${missing}${join}application_name=agent-server@eu-1`);
    expect(withAt).not.toMatch(/percent-encode/);
    expect(withAt).toMatch(/agent_review_missing_db/);
    expect(withAt).toMatch(/does not exist/);
  });
});
