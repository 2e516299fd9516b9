/**
 * README, Configuration: "A bad value stops the server with exit code 2 and a message naming
 * the variable; so does ... a `PORT` or `HOST` the server cannot listen on."
 */
import { afterEach, expect, it } from "vitest";
import { startRefused } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

it("a HOST the kernel refuses to bind (an IPv6 link-local address without its zone) exits 2 naming HOST, not 1 with a stack trace", () => {
  const temp = tempDir("review-config-host-");
  cleanups.push(temp.cleanup);
  // With a key, so the exposure check lets it through to listen().
  const { status, output } = startRefused(temp.path, {
    HOST: "fe80::1",
    AGENT_API_KEYS: "key-a-0123456789abcdef",
  });
  expect(output).not.toMatch(/^fatal:/m);
  expect(output).not.toMatch(/\n\s+at /);
  expect(output).toMatch(/HOST: .*fe80::1/);
  expect(status).toBe(2);
});
