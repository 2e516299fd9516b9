import type { ConfigError } from "./config.js";

/** Ends the process for a configuration the server cannot start with: the message on stderr, exit code 2. */
export function exitWithConfigError(err: ConfigError): never {
  process.stderr.write(`${err.message}\n`);
  process.exit(2);
}
