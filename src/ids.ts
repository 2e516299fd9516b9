import { createHash, randomFillSync } from "node:crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;
let lastTime = 0;
let counter = 0;

/** `length` base-32 digits of `value`, most significant first. */
function encode(value: number, length: number): string {
  let out = "";
  let rest = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

/** Ten random base-32 digits, from a pool refilled 4 KiB at a time. */
function randomDigits(): string {
  if (poolOffset + 10 > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let out = "";
  for (let i = 0; i < 10; i++) out += ALPHABET[(pool[poolOffset++] as number) & 31];
  return out;
}

/**
 * A new id like `ses_01jbz3k8c90000x4q7r5t6v8`: the prefix, then a millisecond time
 * and a counter (so ids sort in creation order within this process), then randomness.
 */
export function newId(prefix: string): string {
  const now = Date.now();
  if (now > lastTime) {
    lastTime = now;
    counter = 0;
  } else {
    counter++;
  }
  return `${prefix}_${encode(lastTime, 10)}${encode(counter, 4)}${randomDigits()}`;
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
