/**
 * APPROVAL_POLICY_MAX (the operator's ceiling on approvals, a security setting) that names
 * the same tool twice with different modes is accepted, and the LAST entry silently wins:
 * `shell=deny,write_file=ask,shell=allow` puts no ceiling on `shell` at all — GET /tools shows
 * `shell` as `ask` (not `deny`) and a client may create a session with
 * `{"approval":{"tools":{"shell":"allow"}}}` (201). The `shell=deny` the operator wrote is
 * silently ignored (what a value assembled from a base policy plus an override, or a
 * copy-paste slip, produces).
 *
 * README: "A bad value stops the server with exit code 2 and a message naming the variable";
 * the sibling list setting OPENAI_PROVIDER already refuses a model named twice
 * ("OPENAI_PROVIDER names gpt-4o twice"). Expected: refused at start (exit 2) naming
 * APPROVAL_POLICY_MAX and the tool named twice; never the looser mode chosen silently.
 */
import type { ChildProcess } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { api, startChildServer } from "../helpers/child-server.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("APPROVAL_POLICY_MAX naming shell twice (deny, then allow) is refused at start, exit 2, naming the variable", async () => {
  const temp = tempDir("cfg-ceiling-");
  cleanups.push(temp.cleanup);
  let exitCode: Promise<number | string> | undefined;
  let refusal: string | null = null;
  let inForce: { shellDefault: unknown; sessionAllowingShell: number } | null = null;
  try {
    const child = await startChildServer({
      dir: temp.path,
      upstreamURL: "http://127.0.0.1:9/v1",
      env: { APPROVAL_POLICY_MAX: "shell=deny,write_file=ask,shell=allow", SHELL_SANDBOX: "off" },
      onSpawn: (process: ChildProcess) => {
        exitCode = new Promise((resolve) => process.on("exit", (code, signal) => resolve(code ?? signal ?? "?")));
      },
    });
    cleanups.push(async () => {
      child.process.kill("SIGKILL");
      await child.exited;
    });
    const tools = (await api(child.url, "GET", "/tools")).body.items as { name: string; defaultApproval: string }[];
    const created = await api(child.url, "POST", "/sessions", { approval: { tools: { shell: "allow" } } });
    inForce = {
      shellDefault: tools.find((tool) => tool.name === "shell")?.defaultApproval,
      sessionAllowingShell: created.status,
    };
  } catch (err) {
    refusal = String(err);
  }
  // It started: the ceiling in force on shell is the looser "allow", the "deny" was dropped.
  expect({ started: inForce !== null, inForce }).toEqual({ started: false, inForce: null });
  expect(await exitCode).toBe(2);
  expect(refusal).toMatch(/APPROVAL_POLICY_MAX: .*shell/);
  expect(refusal).not.toMatch(/\n\s+at /);
});
