/**
 * Crash points for durability tests: `AGENT_FAILPOINTS=after-assistant-commit,...`
 * makes the process SIGKILL itself when execution reaches a named point, so a test
 * can crash the real server at an exact instant. Unset (always, in production), a
 * failpoint is one Set lookup.
 */
export type FailpointName = "after-assistant-commit" | "after-tool-result-commit" | "after-cancel-request";

const armed = new Set(
  (process.env.AGENT_FAILPOINTS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean),
);

export function failpoint(name: FailpointName): void {
  if (armed.size && armed.has(name)) process.kill(process.pid, "SIGKILL");
}
