/**
 * OPENAI_API_KEY (like the password of DATABASE_URL) is a "secret" the logger scrubs from the
 * *serialized* log line, character by character, case-insensitively, wherever it appears:
 * numbers, field names and ids included. A local OpenAI-compatible server (vLLM, Ollama,
 * llama.cpp: README, Providers) needs no key, and operators put a placeholder there; with a
 * short one such as `1` every line on stdout stops being JSON —
 * `{"level":30,"time":[redacted]796682540[redacted]65,...,"msg":"Server listening at
 * http://[redacted]27.0.0.[redacted]:3[redacted]576"}` — and timestamps, ports, pids and
 * run/session ids in the logs are mangled. (A DATABASE_URL password `p` turns `"pid"` into
 * `"[redacted]id"` in every line; a password of digits breaks lines at random.)
 *
 * README (Configuration, LOG_LEVEL): "JSON logs on stdout: a line per request with its id";
 * OPENAI_API_KEY: "never logged". Expected: every line stays valid JSON with its own fields
 * intact (a secret is scrubbed where it could appear as a value, not out of the line's syntax
 * and numbers; or a secret too short to be told from ordinary text is refused/ignored).
 */
import { afterEach, expect, it } from "vitest";
import { startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("with a one-character placeholder OPENAI_API_KEY, each line the server logs on stdout is still valid JSON", async () => {
  const temp = tempDir("cfg-logs-");
  cleanups.push(temp.cleanup);
  const child = await startChildServer({
    dir: temp.path,
    upstreamURL: "http://127.0.0.1:9/v1",
    env: { OPENAI_API_KEY: "1", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "ignore"],
  });
  cleanups.push(async () => {
    child.process.kill("SIGKILL");
    await child.exited;
  });
  expect((await fetch(`${child.url}/sessions`, { method: "POST" })).status).toBe(201);
  child.process.kill("SIGTERM");
  expect(await child.exited).toBe(0);
  const lines = child
    .output()
    .split("\n")
    .filter((line) => line.trim() !== "");
  expect(lines.length).toBeGreaterThan(0);
  const notJson = lines.filter((line) => {
    try {
      JSON.parse(line);
      return false;
    } catch {
      return true;
    }
  });
  expect(notJson).toEqual([]);
});
