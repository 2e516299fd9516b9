/**
 * README (APPROVAL_TIMEOUT_MS): "an approval nobody answers within this of its request is denied
 * (fail closed) ... an approval sent later is 409 APPROVAL_CONFLICT". An approval sent a second
 * after the request is in time, whichever instance behind the load balancer takes it. The
 * ledger refuses an approval by comparing the deciding instance's clock (`at`) with the request
 * time the owner's clock wrote: when the hosts' clocks differ by more than what is left of the
 * timeout, an approval sent at once is refused and the call denied.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { api } from "../helpers/child-server.js";
import { crashHarness } from "../helpers/crash-harness.js";
import { until } from "../helpers/until.js";

const crash = crashHarness({ instanceId: "skew-owner" });
const TIMEOUT_MS = 60_000;
/** The owner's host clock runs two minutes behind the peer's. */
const SKEW_MS = -120_000;

/** A module preloaded into the owner's process: its wall clock (Date) is off by CLOCK_OFFSET_MS. */
const SKEWED_CLOCK = `
const RealDate = Date;
const offset = Number(process.env.CLOCK_OFFSET_MS ?? 0);
class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offset);
    else super(...args);
  }
  static now() {
    return RealDate.now() + offset;
  }
}
globalThis.Date = SkewedDate;
`;

describe("an approval sent at once to a peer whose clock differs from the owner's (postgres)", () => {
  beforeEach(() => crash.prepare("postgres"));

  it("is accepted (200), the call approved", async () => {
    const preload = join(crash.dir, "skewed-clock.mjs");
    writeFileSync(preload, SKEWED_CLOCK);
    const env = { APPROVAL_TIMEOUT_MS: String(TIMEOUT_MS) };
    const peer = await crash.restart({ env: { ...env, INSTANCE_ID: "skew-peer" } });
    const owner = await crash.start({
      ...env,
      NODE_OPTIONS: `--import ${preload}`,
      CLOCK_OFFSET_MS: String(SKEW_MS),
    });
    crash.upstream.enqueue({
      toolCalls: [{ id: "call_s", name: "shell", arguments: JSON.stringify({ command: "echo hi" }) }],
    });
    crash.upstream.enqueue({ text: "done" });
    const session = await api(owner.url, "POST", "/sessions", {});
    const runId = (await api(owner.url, "POST", `/sessions/${session.body.id}/runs`, { input: "go" })).body
      .id as string;
    await until(
      () => api(owner.url, "GET", `/runs/${runId}/approvals`),
      (r) => r.body?.items?.length === 1,
      "the approval request",
    );

    const decided = await peer.request("POST", `/runs/${runId}/approvals/call_s`, { body: { decision: "approve" } });
    expect({ status: decided.status, body: decided.body }).toMatchObject({
      status: 200,
      body: { status: "approved" },
    });
  }, 30_000);
});
