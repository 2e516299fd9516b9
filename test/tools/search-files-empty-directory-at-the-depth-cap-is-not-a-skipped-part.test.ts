/**
 * search_files walks at most SEARCH_MAX_DEPTH (64) directory levels and says so when it leaves
 * something out: "only part of the workspace was searched: directories deeper than 64 levels
 * were not entered", with the result marked truncated. It said so for every directory it met
 * at the cap, also for one that holds nothing: a search over a workspace whose only directory
 * 64 levels down is empty answered truncated, telling the model to search inside a directory
 * where there is nothing to find (and that its answer may be incomplete when it is not).
 *
 * Expected: a directory at the cap that holds nothing (or only what is never searched: .git,
 * node_modules) is not counted as left out; one that holds something still is.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { SEARCH_MAX_DEPTH, searchFilesTool } from "../../src/tools/search-files.js";
import { makeSandbox, runTool, writeTree } from "./helpers.js";

/** The path of a directory SEARCH_MAX_DEPTH levels down: the walk reports it but does not enter it. */
const AT_CAP = Array(SEARCH_MAX_DEPTH).fill("d").join("/");

it("an empty directory at the depth cap leaves the search whole", async () => {
  const { workspace } = await makeSandbox();
  await mkdir(join(workspace, AT_CAP), { recursive: true });
  await writeTree(workspace, { "top.txt": "needle\n" });
  expect(await runTool(searchFilesTool, workspace, { pattern: "needle" })).toMatchObject({
    ok: true,
    output: "top.txt:1: needle",
    truncated: false,
  });
});

it("a directory at the depth cap holding only .git and node_modules leaves the search whole", async () => {
  const { workspace } = await makeSandbox();
  await writeTree(workspace, {
    "top.txt": "needle\n",
    [`${AT_CAP}/.git/HEAD`]: "needle\n",
    [`${AT_CAP}/node_modules/x.js`]: "needle\n",
  });
  expect(await runTool(searchFilesTool, workspace, { pattern: "needle" })).toMatchObject({
    ok: true,
    output: "top.txt:1: needle",
    truncated: false,
  });
});

it("a directory at the depth cap holding a file or an empty directory is still said to be left out", async () => {
  for (const inside of [{ "x.txt": "needle\n" }, { "empty/": null }]) {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "top.txt": "needle\n" });
    for (const [name, content] of Object.entries(inside)) {
      if (content === null) await mkdir(join(workspace, AT_CAP, name), { recursive: true });
      else await writeTree(workspace, { [`${AT_CAP}/${name}`]: content });
    }
    const outcome = await runTool(searchFilesTool, workspace, { pattern: "needle" });
    expect(outcome).toMatchObject({ ok: true, truncated: true });
    expect(outcome.ok && outcome.output).toMatch(
      /only part of the workspace was searched: directories deeper than 64 levels were not entered \(1 directory 64 levels down\)/,
    );
  }
});
