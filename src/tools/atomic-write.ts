import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Replaces (or creates) `path` atomically: the data goes to a temporary file in the same
 * directory, is flushed, and is renamed over `path`. Readers see the old content or the new,
 * never a mix, and a failure leaves `path` untouched and no temporary file behind.
 * `mode` defaults to 0o666 minus the umask (as for any new file).
 */
export async function writeFileAtomic({
  path,
  data,
  mode,
}: {
  path: string;
  data: string | Uint8Array;
  mode?: number;
}): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
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
    await rename(temp, path);
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
}
