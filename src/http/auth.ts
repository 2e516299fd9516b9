import { createHash, timingSafeEqual } from "node:crypto";

const digest = (key: string): Buffer => createHash("sha256").update(key, "utf8").digest();

/**
 * Bearer-key checking. Keys are kept only as SHA-256 digests; a presented key is
 * hashed and compared to every digest in constant time. A key's owner id (what
 * sessions record) is a prefix of its digest's hex.
 */
export class ApiKeys {
  readonly #digests: Buffer[];

  constructor(keys: readonly string[]) {
    this.#digests = keys.map(digest);
  }

  get enabled(): boolean {
    return this.#digests.length > 0;
  }

  /**
   * The whole digest of the key whose owner id is `owner`, or null: unlike the owner id (which
   * logs and the store show), it is known only to this server and to the key's holder.
   */
  digestOf(owner: string): Buffer | null {
    return this.#digests.find((known) => known.toString("hex").slice(0, 32) === owner) ?? null;
  }

  /** The owner id of a valid `Authorization` header, or null. */
  authenticate(header: string | undefined): string | null {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
    if (!match?.[1]) return null;
    const presented = digest(match[1]);
    let found = false;
    for (const known of this.#digests) found = timingSafeEqual(known, presented) || found;
    return found ? presented.toString("hex").slice(0, 32) : null;
  }
}
