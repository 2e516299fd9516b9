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
      // NAT64 (well-known and local-use), IPv4-compatible, IPv4-translated, 6to4, site-local, Teredo
      "64:ff9b::a00:5",
      "64:ff9b::127.0.0.1",
      "64:ff9b:1::a00:5",
      "::7f00:1",
      "::10.0.0.1",
      "::ffff:0:7f00:1",
      "2002:7f00:1::1",
      "2002:c0a8:101::",
      "fec0::1",
      "2001:0:4136:e378:8000:63bf:3fff:fdd2",
      "not-an-ip",
    ]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "2606:4700:4700::1111",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
      "2a00:1450:4001:81b::200e",
    ]) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });
});
