/**
 * AGENT_API_KEYS set to a value that holds no key at all (only separators, e.g. "," — what
 * `AGENT_API_KEYS="$KEY_A,$KEY_B"` becomes when both secrets are missing from the deployment)
 * is silently taken as "no keys": the server starts WITHOUT authentication, logs nothing about
 * it, and anyone who reaches the port (here: on 127.0.0.1, e.g. behind a local reverse proxy)
 * can create a session with `{"approval":{"default":"allow"}}` and run every tool.
 *
 * README (Configuration): "A bad value stops the server with exit code 2 and a message naming
 * the variable"; AGENT_API_KEYS: "comma-separated bearer keys, each at least 16 visible ASCII
 * characters". An empty entry is not such a key, and an operator who set the variable asked
 * for authentication. Expected: the start is refused (exit 2) naming AGENT_API_KEYS.
 * (A variable left unset or blank stays "no auth", as documented; this is about a set value.)
 */
import type { ChildProcess } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { api, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("AGENT_API_KEYS holding only separators (',') refuses to start, exit 2 naming it, instead of serving without auth", async () => {
  const temp = tempDir("cfg-keys-");
  cleanups.push(temp.cleanup);
  let spawned: ChildProcess | undefined;
  let exitCode: Promise<number | string> | undefined;
  let refusal: string | null = null;
  let unauthenticatedCreate: number | null = null;
  try {
    const child = await startChildServer({
      dir: temp.path,
      upstreamURL: "http://127.0.0.1:9/v1",
      env: { AGENT_API_KEYS: "," },
      onSpawn: (process) => {
        spawned = process;
        exitCode = new Promise((resolve) => process.on("exit", (code, signal) => resolve(code ?? signal ?? "?")));
      },
    });
    cleanups.push(async () => {
      child.process.kill("SIGKILL");
      await child.exited;
    });
    // It started: anyone may now create a session that allows every tool, with no key.
    unauthenticatedCreate = (await api(child.url, "POST", "/sessions", { approval: { default: "allow" } })).status;
  } catch (err) {
    refusal = String(err);
  }
  expect({ startedWithoutAuth: unauthenticatedCreate !== null, unauthenticatedCreate }).toEqual({
    startedWithoutAuth: false,
    unauthenticatedCreate: null,
  });
  expect(spawned).toBeDefined();
  expect(await exitCode).toBe(2);
  expect(refusal).toMatch(/AGENT_API_KEYS/);
  expect(refusal).not.toMatch(/\n\s+at /);
});
