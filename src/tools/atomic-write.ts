import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { entryPath, type OpenDir, syncDir } from "./open-dir.js";

/**
 * Replaces (or creates) the entry `name` of the open directory `dir` atomically: the data goes
 * to a new temporary file in that directory, is flushed, and is renamed over `name`, all
 * through the open directory (a link swapped in at `name` is replaced, never followed); then
 * the directory is flushed, so that once this resolves the new entry survives a power loss or
 * a kernel crash too, as the run's record that the tool wrote it does.
 * Readers see the old content or the new, never a mix, and a failure leaves `name` untouched
 * and no temporary file behind. `mode` defaults to 0o666 minus the umask (as for any new file).
 * The temporary's name (`.tmp-` and 12 random hex digits) does not depend on `name`, so any
 * name up to the file system's limit (NAME_MAX) can be written.
 */
export async function writeFileAtomic({
  dir,
  name,
  data,
  mode,
}: {
  dir: OpenDir;
  name: string;
  data: string | Uint8Array;
  mode?: number;
}): Promise<void> {
  const temp = entryPath(dir, `.tmp-${randomBytes(6).toString("hex")}`);
  // "wx" is O_CREAT | O_EXCL: never opens an existing file or follows a link.
  const handle = await open(temp, "wx", mode ?? 0o666);
  try {
    try {
      await handle.writeFile(data);
      // An explicit chmod: open's mode is filtered by the umask, the original mode must not be.
      if (mode !== undefined) await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, entryPath(dir, name));
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
  await syncDir(dir);
}
