/**
 * KEEP_ALIVE_TIMEOUT_MS is accepted up to 2147483647 (README: "durations in milliseconds are
 * at most 2147483647 (what a timer holds)"), but Node's HTTP server arms each idle
 * keep-alive socket's timer at keepAliveTimeout + 1000 ms (its keepAliveTimeoutBuffer): any
 * value above 2147482647 overflows it, and every connection that goes idle prints
 * "(node:PID) TimeoutOverflowWarning: 2147484647 does not fit into a 32-bit signed integer.
 * Timer duration was truncated to 2147483647." on stderr — a non-JSON line per connection,
 * from a value the configuration accepted as valid.
 *
 * Expected: either the value is refused at start (exit 2 naming KEEP_ALIVE_TIMEOUT_MS, its
 * bound being what a timer holds less Node's buffer), or it is clamped so no timer overflows.
 */
import { afterEach, expect, it } from "vitest";
import { startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("KEEP_ALIVE_TIMEOUT_MS=2147483647: refused naming it, or served without a TimeoutOverflowWarning per connection", async () => {
  const temp = tempDir("cfg-keepalive-");
  cleanups.push(temp.cleanup);
  let started: Awaited<ReturnType<typeof startChildServer>> | null = null;
  let refusal = "";
  try {
    started = await startChildServer({
      dir: temp.path,
      upstreamURL: "http://127.0.0.1:9/v1",
      env: { KEEP_ALIVE_TIMEOUT_MS: "2147483647" },
    });
  } catch (err) {
    refusal = String(err);
  }
  if (started === null) {
    // Refused at start: it must name the variable.
    expect(refusal).toMatch(/KEEP_ALIVE_TIMEOUT_MS/);
    return;
  }
  const child = started;
  cleanups.push(async () => {
    child.process.kill("SIGKILL");
    await child.exited;
  });
  // A few requests on kept-alive connections (startChildServer's own /healthz already was one).
  for (let i = 0; i < 3; i++) expect((await fetch(`${child.url}/healthz`)).status).toBe(200);
  // Everything the process wrote is read once it has exited.
  child.process.kill("SIGTERM");
  expect(await child.exited).toBe(0);
  expect(child.output()).not.toMatch(/TimeoutOverflowWarning/);
});
