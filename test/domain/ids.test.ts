import { describe, expect, it } from "vitest";
import { isIdOf, newId } from "../../src/ids.js";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const decode = (digits: string) => [...digits].reduce((value, digit) => value * 32 + ALPHABET.indexOf(digit), 0);

describe("ids", () => {
  it("are the prefix, then the millisecond time, a counter and ten random digits, all base-32", () => {
    const before = Date.now();
    const id = newId("run");
    const after = Date.now();
    expect(id).toMatch(/^run_[0-9a-hjkmnp-tv-z]{24}$/);
    expect(isIdOf("run", id)).toBe(true);
    const time = decode(id.slice(4, 14));
    expect(time).toBeGreaterThanOrEqual(before);
    expect(time).toBeLessThanOrEqual(after);
  });

  it("sort in the order they were made, and differ, also within one millisecond", () => {
    const ids = Array.from({ length: 5000 }, () => newId("msg"));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    // Many within one millisecond: the counter orders them.
    const sameMs = ids.filter((id) => id.slice(4, 14) === ids[0]?.slice(4, 14));
    expect(sameMs.length).toBeGreaterThan(1);
    expect(sameMs.map((id) => decode(id.slice(14, 18)))).toEqual(
      sameMs.map((_, i) => i + decode(sameMs[0]?.slice(14, 18) ?? "0")),
    );
  });

  it("take their random digits from fresh randomness", () => {
    const randoms = new Set(Array.from({ length: 2000 }, () => newId("ses").slice(-10)));
    expect(randoms.size).toBe(2000);
  });
});
