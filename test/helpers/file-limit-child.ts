import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { tempDir } from "./temp-dir.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The file URL of a built module, for a child's `import` (`dist("src/model/openai-client.js")`). */
export const dist = (path: string): string => JSON.stringify(pathToFileURL(join(root, "dist", path)).href);

/** The open-file limit the child runs under: small, so holding every descriptor is quick. */
export const CHILD_FILE_LIMIT = 64;

/**
 * Runs `script`, an ES module's source, in a Node child limited to {@link CHILD_FILE_LIMIT}
 * open files (`ulimit -n`), `args` being its `process.argv[2]` on, and returns what it wrote
 * to stdout. Rejects if the child exits non-zero: an 'error' event or a rejection nobody
 * handled ends it so. Asynchronous, so a server in this process (a fake upstream) can answer it. The script runs from a file, not `-e`: a worker thread inherits the
 * child's flags, and `--input-type=module` would make a CommonJS worker program fail.
 */
export async function runUnderFileLimit(script: string, args: string[] = []): Promise<string> {
  const dir = tempDir("file-limit-child-");
  try {
    const file = join(dir.path, "child.mjs");
    writeFileSync(file, script);
    const { stdout } = await promisify(execFile)(
      "/bin/sh",
      ["-c", `ulimit -n ${CHILD_FILE_LIMIT} && exec "$0" "$@"`, process.execPath, file, ...args],
      { encoding: "utf8" },
    );
    return stdout;
  } finally {
    dir.cleanup();
  }
}
