import { ConfigError, configSecrets, loadConfig } from "./config.js";
import { exitWithConfigError } from "./config-exit.js";
import { exposureProblem, shellNetworkProblem } from "./exposure.js";
import { closeInheritedDescriptors } from "./inherited-descriptors.js";
import { createLogger } from "./logger.js";

/**
 * The process entry: descriptors inherited open are closed, the configuration is validated
 * and the exposure checked; only then is the rest of the server loaded and started
 * (serve.ts), so that a start refused for its configuration exits 2 having loaded a sixth of
 * the server's modules (bench:startup measures it).
 */
async function main(): Promise<void> {
  // Everything this process creates (the database, its WAL, workspaces, what tools and shell
  // commands write) is private to the server's user: files 0600, directories 0700.
  process.umask(0o077);
  // Before anything is started: no shell command may inherit what the launcher left open.
  const inherited = closeInheritedDescriptors();
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) exitWithConfigError(err);
    throw err;
  }
  const logger = createLogger({ level: config.LOG_LEVEL, secrets: configSecrets(config) });
  if (inherited.length > 0) {
    logger.warn(
      { descriptors: inherited },
      "closed descriptors the server inherited open (shell commands would have inherited them in turn)",
    );
  }
  const exposure = await exposureProblem({
    host: config.HOST,
    authenticated: config.AGENT_API_KEYS.length > 0,
    allowUnauthenticated: config.ALLOW_UNAUTHENTICATED,
  });
  const unguardedShell = shellNetworkProblem({
    shellNetwork: config.SHELL_NETWORK,
    authenticated: config.AGENT_API_KEYS.length > 0,
    allowUnauthenticated: config.ALLOW_UNAUTHENTICATED,
  });
  const problems = [exposure, unguardedShell].filter((problem): problem is string => problem !== null);
  if (problems.length > 0) exitWithConfigError(new ConfigError(problems));
  if (config.ALLOW_UNAUTHENTICATED && config.AGENT_API_KEYS.length === 0) {
    logger.warn(
      { host: config.HOST },
      "serving without authentication (ALLOW_UNAUTHENTICATED=1): anyone who reaches the port can run tools",
    );
  }
  const { serve } = await import("./serve.js");
  await serve({ config, logger });
}

main().catch((err) => {
  process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
