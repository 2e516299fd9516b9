import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

/** The operator console: a static bundle in dist/console, served by the server at `/`. */
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../dist/console", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
  },
});
