/**
 * Runs the README's command-line client examples verbatim against a live server: the ```sh
 * blocks between `<!-- cli-examples -->` and `<!-- /cli-examples -->`, one after the other,
 * by `/bin/sh`, from a project where `agent-server` is installed (`node_modules/.bin`, as
 * `npm install` links it), so `npx agent-server` runs this checkout's built client. Each
 * step must print what the README shows after it, ids aside.
 */
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliModel } from "../cli/model-script.js";
import { assignedNames, readmeSteps, runBlock } from "../helpers/readme-steps.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const ids = (text: string | null | undefined) => text?.replace(/\b(ses|run)_[0-9a-z]{20,}\b/g, "$1_<id>");

describe("the README's command-line client examples", () => {
  let server: TestServer;
  let project: { path: string; cleanup: () => void };
  const steps = readmeSteps(readFileSync(join(root, "README.md"), "utf8"), "cli-examples");
  const names = assignedNames(steps.map((step) => step.code));

  beforeAll(async () => {
    server = await startTestServer();
    server.upstream.fallback = cliModel;
    project = tempDir("readme-cli-");
    mkdirSync(join(project.path, "node_modules/.bin"), { recursive: true });
    symlinkSync(root, join(project.path, "node_modules/agent-server"));
    symlinkSync("../agent-server/bin/agent-server.mjs", join(project.path, "node_modules/.bin/agent-server"));
  });
  afterAll(async () => {
    await server?.close();
    project?.cleanup();
  });

  it("runs every example verbatim with the output shown", { timeout: 60_000 }, async () => {
    expect(steps).toHaveLength(5);
    expect(names).toEqual(["SESSION"]);
    let vars: Record<string, string> = {};
    const outputs: string[] = [];
    for (const [index, step] of steps.entries()) {
      const env = {
        PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
        HOME: project.path,
        LANG: "C.UTF-8",
        AGENT_URL: server.url,
        // npm itself stays quiet and off the network: it only runs the linked bin.
        npm_config_update_notifier: "false",
        npm_config_offline: "true",
        ...vars,
      };
      const result = await runBlock(step.code, env, names, project.path);
      if (result.code !== 0) {
        throw new Error(
          `example ${index + 1} failed (exit ${result.code}):\n${step.code}\n${result.stdout}\n${result.stderr}`,
        );
      }
      vars = { ...vars, ...result.vars };
      expect(ids(result.stdout), `the README shows, after example ${index + 1}`).toBe(ids(step.shown));
      outputs.push(result.stdout);
    }
    // The session id a script takes from stderr is the one the later examples ran in.
    const session = vars.SESSION as string;
    expect(session).toMatch(/^ses_\w+$/);
    expect(outputs[1]).toContain(`\nsession ${session}\n`);
    expect(outputs[4]).toContain(`session ${session}\n`);
    expect(outputs[4]).toContain(`go on with --session ${session},`);
    const runs = (await server.request("GET", `/sessions/${session}/runs`)).body.items;
    expect(runs.map((run: { stopReason: string }) => run.stopReason).sort()).toEqual(
      ["complete", "complete", "complete", "max_turns"].sort(),
    );
    const workspace = (await server.request("GET", `/sessions/${session}`)).body.workspace;
    expect(readFileSync(join(server.ctx.config.WORKSPACE_ROOT, workspace, "hello.txt"), "utf8")).toBe("hello, world\n");
  });
});
