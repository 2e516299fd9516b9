import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The version in the package.json of this project (found upwards from this file, built or not). */
export function clientVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const path = join(dir, "package.json");
    if (existsSync(path)) {
      const found: unknown = JSON.parse(readFileSync(path, "utf8"));
      if (typeof found === "object" && found !== null && "name" in found && found.name === "agent-server") {
        return "version" in found && typeof found.version === "string" ? found.version : "unknown";
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return "unknown";
    dir = parent;
  }
}
