import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
let lastTime = 0;
let counter = 0;

function encode(value: number, length: number): string {
  let out = "";
  let rest = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

/**
 * A new id like `ses_01jbz3k8c9m2x4q7r5t6v8w9yz`: the prefix, then a millisecond time
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
  const random = randomBytes(8).readBigUInt64BE() % 32n ** 10n;
  return `${prefix}_${encode(lastTime, 10)}${encode(counter, 4)}${random.toString(32).padStart(10, "0")}`;
}
