/**
 * list_files on a directory of a million entries. It used to read every entry (search_files'
 * walk is bounded, list_files' was not), sorting them all before showing 500, and to look at
 * its signal only between the entries it showed, never while it read a directory. Now it reads
 * at most LIST_MAX_LISTED_ENTRIES entries, saying the listing was cut, and a cancel stops the
 * read within one piece (256 entries). opendirSync is wrapped so that the listed directory
 * yields synthetic entries (nothing is written to disk), counting how many are read.
 */
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LIST_MAX_LISTED_ENTRIES, listFilesTool } from "../../src/tools/list-files.js";
import { makeSandbox, runTool } from "./helpers.js";

const fake = {
  armed: 0,
  read: 0,
  onRead: null as null | ((read: number) => void),
};

// node:fs's opendirSync, put back after each test (syncBuiltinESMExports makes the modules that
// import it by name see the change: no module is mocked, as the suite's shared workers need).
const realOpendirSync = fs.opendirSync;
beforeEach(() => {
  fs.opendirSync = ((path, options) => {
    if (fake.armed === 0) return realOpendirSync(path, options);
    const total = fake.armed;
    fake.armed = 0;
    let i = 0;
    const handle = {
      readSync() {
        if (i >= total) return null;
        i++;
        fake.read++;
        fake.onRead?.(fake.read);
        const name = `f${String(i).padStart(7, "0")}.txt`;
        return { name, isDirectory: () => false, isFile: () => true, isSymbolicLink: () => false };
      },
      closeSync() {},
    };
    return handle as unknown as ReturnType<typeof realOpendirSync>;
  }) as typeof fs.opendirSync;
  syncBuiltinESMExports();
});
afterEach(() => {
  fs.opendirSync = realOpendirSync;
  syncBuiltinESMExports();
  fake.armed = 0;
  fake.onRead = null;
});

describe("list_files on a huge directory", () => {
  it("reads at most LIST_MAX_LISTED_ENTRIES entries of a directory of 1,000,000, and says the listing was cut", async () => {
    const { workspace } = await makeSandbox();
    fake.read = 0;
    fake.onRead = null;
    fake.armed = 1_000_000;
    const outcome = await runTool(listFilesTool, workspace, { depth: 1 });
    expect(outcome).toMatchObject({ ok: true, truncated: true });
    expect(outcome.ok && outcome.output).toContain(`over ${LIST_MAX_LISTED_ENTRIES} entries`);
    expect({ entriesRead: fake.read }).toEqual({
      entriesRead: expect.toSatisfy((n: number) => n <= LIST_MAX_LISTED_ENTRIES + 1),
    });
  }, 60_000);

  it("stops reading a huge directory within one piece (256 entries) once the run is cancelled", async () => {
    const { workspace } = await makeSandbox();
    const cancel = new AbortController();
    fake.read = 0;
    fake.armed = 200_000;
    let readAtCancel = 0;
    fake.onRead = (read) => {
      if (read === 1_000) {
        readAtCancel = read;
        cancel.abort(new Error("by a DELETE /runs/{id} request"));
      }
    };
    const outcome = await runTool(listFilesTool, workspace, { depth: 1 }, cancel.signal);
    fake.onRead = null;
    expect(outcome).toMatchObject({ ok: false, errorCode: "LIST_ABORTED" });
    expect({ readAfterCancel: fake.read - readAtCancel }).toEqual({
      readAfterCancel: expect.toSatisfy((n: number) => n <= 256),
    });
  }, 60_000);
});
