import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Builds dist/ (the server and the console) once before the suite: tests that start the real server process use it. */
export default function setup(): void {
  const root = fileURLToPath(new URL("..", import.meta.url));
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], {
    cwd: root,
    stdio: "inherit",
  });
  execFileSync(process.execPath, ["node_modules/vite/bin/vite.js", "build", "--config", "console/vite.config.ts"], {
    cwd: root,
    stdio: "inherit",
  });
}
