#!/usr/bin/env node
// `agent-server` (`npx agent-server` in a checkout): the command-line client. Its code is
// built into dist/ with the server (`npm run build`; `npm start` builds too). It exits with
// the code `main` resolves with once stdout and stderr are flushed.
import { existsSync } from "node:fs";

const entry = new URL("../dist/src/cli/main.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("agent-server: the client is not built: run `npm run build` (or `npm start`) first\n");
  process.exit(70);
}
// A reader that went away (`| head -1`) ends the output, not the client.
for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
const { main } = await import(entry.href);
let code;
try {
  code = await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`agent-server: internal error: ${error instanceof Error ? error.stack : String(error)}\n`);
  code = 70;
}
const flushed = (stream) => new Promise((resolve) => stream.write("", resolve));
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
