import { describe, expect, it } from "vitest";
import { isPrivateAddress } from "../../src/webhooks/address-guard.js";
import { nextTryAt } from "../../src/webhooks/worker.js";

describe("webhook retry schedule", () => {
  const schedule = { baseMs: 5_000, maxMs: 3_600_000, windowMs: 86_400_000 };
  it("doubles from the base after each failure, at most the maximum apart, and gives up past its window", () => {
    const at = (failures: number, now = 0) => nextTryAt(schedule, { failures, createdAt: 0, now });
    expect([1, 2, 3, 4].map((n) => at(n))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(at(20)).toBe(3_600_000);
    expect(at(30, 86_400_000 - 3_600_000)).toBe(86_400_000);
    expect(at(30, 86_400_000 - 3_599_999)).toBeNull();
  });
});

describe("private addresses", () => {
  it("refuses loopback, private, link-local, unspecified, multicast and IPv4-mapped addresses; lets public ones through", () => {
    for (const address of [
      "127.0.0.1",
      "10.0.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "0.0.0.0",
      "100.64.0.1",
      "224.0.0.1",
      "::1",
      "::",
      "fd00::1",
      "fe80::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:a00:1",
      "not-an-ip",
    ]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });
});
