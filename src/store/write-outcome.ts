import { StorageError } from "./errors.js";

/**
 * Whether a write that failed was done after all: `not done` for a failure that says so;
 * for one whose outcome is unknown (its answer lost after it was sent), as `done` reads it
 * back, or `unknown` when that read fails too.
 */
export async function outcomeOf(err: unknown, done: () => Promise<boolean>): Promise<"done" | "not done" | "unknown"> {
  if (!(err instanceof StorageError && err.outcomeUnknown)) return "not done";
  return done().then(
    (yes) => (yes ? "done" : "not done"),
    () => "unknown",
  );
}
