/**
 * What went wrong, in a sentence, from anything thrown. Imports nothing of the project, so
 * every layer (the loop, the stores, the CLI) may use it.
 */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
