import { parseCommand } from "./args.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import { HELP } from "./help.js";
import { type CliIo, processIo } from "./io.js";
import { printable } from "./printable.js";
import { clientVersion } from "./version.js";

/**
 * The `agent-server` command: resolves with its exit code. A `CliError` is reported as
 * one line on stderr; anything else thrown is a bug and is left to the launcher.
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    const command = parseCommand(argv);
    if (command.kind === "help") {
      io.stdout.write(HELP);
      return EXIT.complete;
    }
    if (command.kind === "version") {
      io.stdout.write(`agent-server ${clientVersion()}\n`);
      return EXIT.complete;
    }
    // Loaded only for a run: --help and --version stay quick.
    const { runCommand } = await import("./run-command.js");
    return await runCommand(command.options, io);
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    // A refusal may quote the server or its upstream: shown escaped, like everything from there.
    io.stderr.write(`agent-server: ${printable(error.message)}\n`);
    return error.exitCode;
  }
}
