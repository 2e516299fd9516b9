/**
 * README: HEADERS_TIMEOUT_MS is "time a client has to send a request's headers (at most
 * `REQUEST_TIMEOUT_MS`)", and durations may be up to 2147483647 ms. A pair the configuration
 * accepts must start the server; a value it cannot use must be refused with exit 2 naming it.
 */
import { afterEach, expect, it } from "vitest";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { api, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("HEADERS_TIMEOUT_MS above 300000 with a longer REQUEST_TIMEOUT_MS (a valid pair) starts the server instead of crashing it with exit 1", async () => {
  const temp = tempDir("review-config-headers-timeout-");
  cleanups.push(temp.cleanup);
  const upstream: FakeUpstream = await startFakeUpstream();
  cleanups.push(() => upstream.close());
  let exitCode: number | null = null;
  let failure = "";
  try {
    const server = await startChildServer({
      dir: temp.path,
      upstreamURL: upstream.baseURL,
      env: { HEADERS_TIMEOUT_MS: "300001", REQUEST_TIMEOUT_MS: "600000" },
      onSpawn: (child) => child.on("exit", (code) => (exitCode = code)),
    });
    cleanups.push(async () => {
      server.process.kill("SIGKILL");
      await server.exited;
    });
    expect((await api(server.url, "GET", "/readyz")).status).toBe(200);
  } catch (err) {
    failure = (err as Error).message;
  }
  expect(failure.split("\n").find((line) => /fatal|Error/.test(line)) ?? failure).toBe("");
  expect(exitCode).toBeNull();
});
