import { createHash, randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;
let lastTime = 0;
let counter = 0;

/** The alphabet as bytes, and where an id's 24 digits are put together before becoming its string. */
const DIGITS = Buffer.from(ALPHABET, "latin1");
const body = Buffer.alloc(24);

/** Writes `value`'s last `length` base-32 digits into `body` at `at`, most significant first. */
function putDigits(value: number, at: number, length: number): void {
  let rest = value;
  for (let i = at + length - 1; i >= at; i--) {
    body[i] = DIGITS[rest % 32] as number;
    rest = Math.floor(rest / 32);
  }
}

/**
 * A new id like `ses_01jbz3k8c90000x4q7r5t6v8`: the prefix, then a millisecond time (10
 * digits) and a counter (4) (so ids sort in creation order within this process), then 10
 * random digits (from a pool refilled 4 KiB at a time). The digits are written as bytes and
 * read as one string: a run makes a dozen ids, and a string built a digit at a time leaves
 * two dozen strings behind each.
 */
export function newId(prefix: string): string {
  const now = Date.now();
  if (now > lastTime) {
    lastTime = now;
    counter = 0;
  } else {
    counter++;
  }
  putDigits(lastTime, 0, 10);
  putDigits(counter, 10, 4);
  if (poolOffset + 10 > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  for (let i = 14; i < 24; i++) body[i] = DIGITS[(pool[poolOffset++] as number) & 31] as number;
  return `${prefix}_${body.toString("latin1", 0, 24)}`;
}

/**
 * Whether `value` has the shape of an id made with `prefix` (as a list cursor must): the
 * prefix, `_`, then base-32 digits (lower-case letters and digits; older ids used other
 * letters and lengths).
 */
export function isIdOf(prefix: string, value: string): boolean {
  return value.startsWith(`${prefix}_`) && /^[0-9a-z]{10,40}$/.test(value.slice(prefix.length + 1));
}

/**
 * The id made with `prefix` for `seed`, the same for the same seed (an idempotency key's
 * request, say): `prefix`, `_`, then 26 base-32 digits of the seed's SHA-256.
 */
export function idFor(prefix: string, seed: string): string {
  const digest = createHash("sha256").update(seed).digest();
  let out = "";
  for (let i = 0; i < 26; i++) out += ALPHABET[(digest[i] as number) & 31];
  return `${prefix}_${out}`;
}
