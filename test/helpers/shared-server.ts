import { afterAll, afterEach, beforeEach } from "vitest";
import type { TestServer } from "./test-server.js";
import { until } from "./until.js";

/**
 * One server for the tests of the enclosing block instead of one for each (a start and a stop
 * cost about what such a test does), each test working in sessions of its own. Registers the
 * block's hooks: before each test, `use` is given the server (started by `start` on first use),
 * its upstream's record of requests emptied. After each test the server is kept for the next
 * only if the test left it as it found it: no run live, every scripted reply taken (its
 * upstream's fallback is unset). Otherwise it is closed and the next test gets a new one, so a
 * test that fails halfway leaves nothing to the next.
 */
export function sharedTestServer(start: () => Promise<TestServer>, use: (server: TestServer) => void): void {
  let shared: TestServer | null = null;
  beforeEach(async () => {
    shared ??= await start();
    shared.upstream.requests.length = 0;
    use(shared);
  });
  afterEach(async () => {
    const used = shared;
    if (!used) return;
    if (await leftAsFound(used)) return;
    shared = null;
    await used.close();
  });
  afterAll(async () => {
    await shared?.close();
    shared = null;
  });
}

/**
 * Whether a test left `server` as it found it, to be used by the next: no run live, every reply
 * scripted on its upstream taken. Unsets the upstream's fallback.
 */
export async function leftAsFound(server: TestServer): Promise<boolean> {
  server.upstream.fallback = undefined;
  return (await idle(server)) && consumed(server);
}

/** Whether the server's live runs have all ended (a run's end is seen a moment before it leaves). */
function idle(server: TestServer): Promise<boolean> {
  return until(
    () => server.ctx.manager.liveCount,
    (n) => n === 0,
    "no run left live",
  ).then(
    () => true,
    () => false,
  );
}

/** Whether every reply scripted on the server's upstream was taken (one left would answer the next test). */
function consumed(server: TestServer): boolean {
  try {
    server.upstream.assertComplete();
    return true;
  } catch {
    return false;
  }
}
