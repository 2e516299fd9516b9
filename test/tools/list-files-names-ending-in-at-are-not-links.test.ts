/**
 * list_files marks a symbolic link with a trailing "@". A file whose own name ends in "@" was
 * shown the same way (`foo@`), so the model could not tell a file `foo@` from a link `foo`
 * (and would read the wrong one). Such a name is shown as a JSON string, as other names that
 * could be misread are.
 */
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { listFilesTool } from "../../src/tools/list-files.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

it("a file named foo@ and a symbolic link foo are listed differently", async () => {
  const { workspace } = await makeSandbox();
  await writeTree(workspace, { "foo@": "x", "target.txt": "y" });
  await symlink("target.txt", join(workspace, "foo"));
  const lines = expectOk(await runTool(listFilesTool, workspace, {})).split("\n");
  expect(lines).toEqual(["foo@", '"foo@"', "target.txt"]);
});

it("search_files shows that file's matches under the same quoted name", async () => {
  const { workspace } = await makeSandbox();
  await writeTree(workspace, { "foo@": "needle\n" });
  expect(expectOk(await runTool(searchFilesTool, workspace, { pattern: "needle" }))).toBe('"foo@":1: needle');
});
