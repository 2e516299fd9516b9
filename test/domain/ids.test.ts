import { describe, expect, it, vi } from "vitest";
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

  it("sort in the order they were made, and differ", () => {
    const ids = Array.from({ length: 5000 }, () => newId("msg"));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("made within one millisecond are ordered by their counter", () => {
    // The clock held still (a loaded machine may not make two ids in one real millisecond).
    const now = vi.spyOn(Date, "now").mockReturnValue(Date.now());
    try {
      const ids = Array.from({ length: 100 }, () => newId("msg"));
      expect(new Set(ids.map((id) => id.slice(4, 14))).size).toBe(1);
      const counters = ids.map((id) => decode(id.slice(14, 18)));
      expect(counters).toEqual(counters.map((_, i) => i + (counters[0] ?? 0)));
      expect([...ids].sort()).toEqual(ids);
    } finally {
      now.mockRestore();
    }
  });

  it("take their random digits from fresh randomness", () => {
    const randoms = new Set(Array.from({ length: 2000 }, () => newId("ses").slice(-10)));
    expect(randoms.size).toBe(2000);
  });
});
