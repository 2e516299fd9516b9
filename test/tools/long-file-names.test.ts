import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editFileTool } from "../../src/tools/edit-file.js";
import { readFileTool } from "../../src/tools/read-file.js";
import { writeFileTool } from "../../src/tools/write-file.js";
import { expectOk, makeSandbox, runTool, shown } from "./helpers.js";

/**
 * Linux allows a file name of up to 255 bytes (NAME_MAX). The atomic write's temporary file
 * used to be named after the target (18 bytes longer), so write_file and edit_file refused any
 * name of 238..255 bytes as "too long a path". The temporary's name is now short and does not
 * depend on the target's: every legal name can be written and edited.
 */
describe("file names near NAME_MAX", () => {
  for (const length of [245, 255]) {
    const name = "n".repeat(length);

    it(`write_file creates a file whose name is ${length} bytes long, leaving no temp file`, async () => {
      const { workspace } = await makeSandbox();
      const outcome = await runTool(writeFileTool, workspace, { path: name, content: "hello\n" });
      expect(outcome.ok, shown(outcome).slice(-60)).toBe(true);
      expect(await readFile(join(workspace, name), "utf8")).toBe("hello\n");
      expect(await readdir(workspace)).toEqual([name]);
    });

    it(`edit_file edits an existing file (that read_file reads) whose name is ${length} bytes long`, async () => {
      const { workspace } = await makeSandbox();
      await writeFile(join(workspace, name), "hello\n");
      expect(expectOk(await runTool(readFileTool, workspace, { path: name }))).toContain("hello");
      const outcome = await runTool(editFileTool, workspace, { path: name, oldText: "hello", newText: "bye" });
      expect(outcome.ok, shown(outcome).slice(-60)).toBe(true);
      expect(await readFile(join(workspace, name), "utf8")).toBe("bye\n");
      expect(await readdir(workspace)).toEqual([name]);
    });
  }
});
