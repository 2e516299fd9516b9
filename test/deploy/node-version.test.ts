/**
 * `npm start` (scripts/start.mjs) on a Node.js older than package.json's engines: a message
 * naming the requirement and exit 1, before anything is built or loaded (the server's
 * dependencies crash on old Node with a stack trace that names no cause).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const engines = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).engines.node as string;
type Check = { nodeVersionProblem(version: string, range: string): string | null };
const script = pathToFileURL(join(root, "scripts/node-version.mjs")).href;

/** A Node.js binary of this machine older than 22 (Debian's /usr/bin/node is 20 here), or null. */
function oldNode(): string | null {
  for (const candidate of ["/usr/bin/node", "/usr/local/bin/node"]) {
    try {
      const version = execFileSync(candidate, ["--version"], { encoding: "utf8" }).trim();
      if (Number(/^v(\d+)/.exec(version)?.[1]) < 22) return candidate;
    } catch {
      // Not installed there.
    }
  }
  return null;
}
const old = oldNode();

describe("the Node.js version npm start needs", () => {
  it(`refuses what is below package.json's engines (${engines}), naming it; accepts what meets it`, async () => {
    const { nodeVersionProblem } = (await import(script)) as Check;
    expect(engines).toBe(">=22.12");
    for (const version of ["20.20.2", "22.11.0", "18.0.0", "21.99.99"]) {
      expect(nodeVersionProblem(version, engines), version).toMatch(
        new RegExp(`needs Node\\.js >=22\\.12 \\(package\\.json "engines"\\), and this is Node\\.js ${version}`),
      );
    }
    for (const version of ["22.12.0", "22.12.1", "23.0.0", "24.3.0"])
      expect(nodeVersionProblem(version, engines)).toBe(null);
    expect(() => nodeVersionProblem("24.0.0", "^22")).toThrow(/only >=/);
  });

  it.skipIf(old === null)(
    "scripts/start.mjs under this machine's old Node: the message, exit 1, nothing started",
    () => {
      const dir = tempDir("old-node-");
      try {
        const result = spawnSync(old as string, [join(root, "scripts/start.mjs")], {
          cwd: root,
          env: {
            PATH: "/usr/bin:/bin",
            PORT: "0",
            DATABASE_PATH: join(dir.path, "agent.db"),
            WORKSPACE_ROOT: dir.path,
          },
          encoding: "utf8",
          timeout: 15_000,
        });
        const output = `${result.stdout}${result.stderr}`;
        expect(output).toMatch(
          /the agent server needs Node\.js >=22\.12 \(package\.json "engines"\), and this is Node\.js \d+\./,
        );
        expect(output).not.toMatch(/\n\s+at /);
        expect(result.status).toBe(1);
      } finally {
        dir.cleanup();
      }
    },
  );
});
