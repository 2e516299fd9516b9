import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { expectOk, makeSandbox, runTool, writeTree } from "./helpers.js";

/**
 * Two sessions sharing a workspace (or one run's calls and another's) may edit one file at the
 * same time: each edit reported done is in the file, none lost to another's read-then-rename.
 */
it("concurrent edits of one file, each replacing its own line, are all in the file", async () => {
  const { workspace } = await makeSandbox();
  const lines = Array.from({ length: 12 }, (_, i) => `line ${i} = old;`);
  await writeTree(workspace, { "shared.txt": `${lines.join("\n")}\n` });
  const outcomes = await Promise.all(
    lines.map((line, i) =>
      runTool(editFileTool, workspace, { path: "shared.txt", oldText: line, newText: `line ${i} = new;` }),
    ),
  );
  for (const outcome of outcomes) expectOk(outcome);
  const text = await readFile(join(workspace, "shared.txt"), "utf8");
  expect(text).toBe(`${lines.map((_, i) => `line ${i} = new;`).join("\n")}\n`);
});
