/**
 * NODE_COMPILE_CACHE for the Node processes a test starts with an environment of its own (the
 * built server, the client): the directory vitest.config.ts sets for the suite, so the ~1,000
 * modules each start compiles are compiled once per suite rather than once per process. It
 * only caches V8's compiled code: the same modules run, with the same environment otherwise
 * (a shell command never sees it: its environment is an allow-list).
 */
export const compileCacheEnv: Record<string, string> = process.env.NODE_COMPILE_CACHE
  ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }
  : {};
