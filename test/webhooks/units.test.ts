import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { isPrivateAddress } from "../../src/webhooks/address-guard.js";
import { GivenUpReport } from "../../src/webhooks/given-up-report.js";
import { closedBeforeClaim, nextTryAt, retryAfterMs } from "../../src/webhooks/retry-schedule.js";
import { capturedLogs } from "../helpers/captured-logs.js";

describe("webhook retry schedule", () => {
  const schedule = { baseMs: 5_000, maxMs: 3_600_000, windowMs: 86_400_000 };
  it("doubles from the base after each failure, at most the maximum apart, and gives up past its window", () => {
    const at = (failures: number, now = 0) => nextTryAt(schedule, { failures, createdAt: 0, now });
    expect([1, 2, 3, 4].map((n) => at(n))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(at(20)).toBe(3_600_000);
    expect(at(30, 86_400_000 - 3_600_000)).toBe(86_400_000);
    expect(at(30, 86_400_000 - 3_599_999)).toBeNull();
  });

  it("a try due at the window's very end is still sent when claimed a little later; one claimed after a downtime is not", () => {
    const last = nextTryAt(schedule, { failures: 30, createdAt: 0, now: 86_400_000 - 3_600_000 });
    expect(last).toBe(86_400_000);
    // Claimed at the next poll (a few ms late), or after a receiver's cooling: still tried.
    expect(closedBeforeClaim(schedule, { createdAt: 0, now: 86_400_000 + 20 })).toBe(false);
    expect(closedBeforeClaim(schedule, { createdAt: 0, now: 86_400_000 + 59_000 })).toBe(false);
    // Claimed after the server was down past the window: given up untried.
    expect(closedBeforeClaim(schedule, { createdAt: 0, now: 86_400_000 + 3_600_000 })).toBe(true);
    // A short window allows a tenth of itself.
    const short = { ...schedule, windowMs: 2_000 };
    expect(closedBeforeClaim(short, { createdAt: 0, now: 2_150 })).toBe(false);
    expect(closedBeforeClaim(short, { createdAt: 0, now: 2_250 })).toBe(true);
  });

  it("keeps a receiver's Retry-After when it asks for longer than the backoff, at most the maximum", () => {
    const at = (failures: number, wait: number | null) =>
      nextTryAt(schedule, { failures, createdAt: 0, now: 0, retryAfterMs: wait });
    expect(at(1, 60_000)).toBe(60_000);
    expect(at(4, 1_000)).toBe(40_000);
    expect(at(1, 86_400_000)).toBe(3_600_000);
    expect(at(1, null)).toBe(5_000);
  });

  it("reads Retry-After as seconds or an HTTP date; anything else is none", () => {
    const now = Date.parse("2026-12-06T12:00:00Z");
    expect(retryAfterMs("120", now)).toBe(120_000);
    expect(retryAfterMs(" 5 ", now)).toBe(5_000);
    expect(retryAfterMs("Sun, 06 Dec 2026 12:01:00 GMT", now)).toBe(60_000);
    expect(retryAfterMs("Sun, 06 Dec 2026 11:00:00 GMT", now)).toBe(0);
    expect([retryAfterMs(undefined, now), retryAfterMs("soon", now), retryAfterMs("-5", now)]).toEqual([
      null,
      null,
      null,
    ]);
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

describe("the log of deliveries given up at WEBHOOK_MAX_PENDING_PER_KEY", () => {
  it("logs the first at once, then at most once a minute with the count of each owner's since", () => {
    const { lines, logger } = capturedLogs();
    let now = 1_000_000;
    const report = new GivenUpReport({ logger, cap: 5, now: () => now });
    const logged = () => lines.map((line) => JSON.parse(line));
    report.report(new Map());
    expect(lines).toEqual([]);
    report.report(new Map([["key_a", 2]]));
    expect(logged()).toMatchObject([{ givenUp: 2, owners: [{ owner: "key_a", count: 2 }], maxPendingPerKey: 5 }]);
    now += 30_000;
    report.report(new Map([["key_a", 3]]));
    report.report(
      new Map([
        ["key_a", 1],
        [null, 4],
      ]),
    );
    expect(lines).toHaveLength(1);
    now += 30_000;
    report.report(new Map());
    expect(logged()[1]).toMatchObject({
      givenUp: 8,
      owners: [
        { owner: "key_a", count: 4 },
        { owner: null, count: 4 },
      ],
    });
    // Nothing given up since: nothing logged, however long it has been.
    now += 600_000;
    report.report(new Map());
    expect(lines).toHaveLength(2);
  });
});

describe("WEBHOOK_MAX_PENDING_PER_KEY", () => {
  const base = { OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };
  it("is 10000 by default, 0 for no cap, a whole number up to 10,000,000, with or without keys", () => {
    expect(loadConfig(base).WEBHOOK_MAX_PENDING_PER_KEY).toBe(10_000);
    expect(loadConfig({ ...base, WEBHOOK_MAX_PENDING_PER_KEY: "0" }).WEBHOOK_MAX_PENDING_PER_KEY).toBe(0);
    expect(loadConfig({ ...base, WEBHOOK_MAX_PENDING_PER_KEY: "250" }).WEBHOOK_MAX_PENDING_PER_KEY).toBe(250);
    for (const value of ["-1", "1e4", "10000001", "many"]) {
      expect(() => loadConfig({ ...base, WEBHOOK_MAX_PENDING_PER_KEY: value }), value).toThrow(
        /WEBHOOK_MAX_PENDING_PER_KEY: /,
      );
    }
  });
});
