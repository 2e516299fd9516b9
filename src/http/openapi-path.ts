import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The project's `openapi.yaml`, from `src/http/` or from `dist/src/http/`. */
export function openapiPath(): string {
  for (const up of ["../../openapi.yaml", "../../../openapi.yaml"]) {
    const path = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error("openapi.yaml not found");
}
