// The Node.js version check `npm start` makes before anything else: it must load and run on any
// old Node (no syntax or API newer than Node 12), so an old runtime gets a message instead of a
// stack trace from deep inside a dependency.
import { readFileSync } from "node:fs";

/**
 * Why Node `version` (process.versions.node, e.g. "20.20.2") cannot run the server, given
 * package.json's engines.node `range` (written `>=MAJOR[.MINOR[.PATCH]]`, the one form this
 * project uses; another form throws); null when it can.
 */
export function nodeVersionProblem(version, range) {
  const wanted = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  if (!wanted) throw new Error(`package.json engines.node "${range}": only >=MAJOR.MINOR.PATCH is understood`);
  const need = wanted.slice(1).map((n) => Number(n ?? 0));
  const have = version.split(".").map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const part = have[i] ?? 0;
    if (part > need[i]) return null;
    if (part < need[i]) {
      return `the agent server needs Node.js ${range.trim()} (package.json "engines"), and this is Node.js ${version} (${process.execPath}): install Node.js 24 LTS (or 22.12 or later) and run npm start with it`;
    }
  }
  return null;
}

/** nodeVersionProblem for this process and the package.json at `packageJsonPath`. */
export function currentNodeProblem(packageJsonPath) {
  const range = JSON.parse(readFileSync(packageJsonPath, "utf8")).engines?.node;
  return range ? nodeVersionProblem(process.versions.node, range) : null;
}
