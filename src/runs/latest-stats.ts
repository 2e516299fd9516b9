import type { RunChange } from "../store/store.js";

/**
 * The changes with only the `stats` change that counts: the last one, or none when the run's
 * finish is among them (it stores the final stats itself, and no stats change applies after it).
 */
export function latestStatsOnly(changes: RunChange[]): RunChange[] {
  let finishes = false;
  let count = 0;
  let last = -1;
  for (let i = 0; i < changes.length; i++) {
    const kind = changes[i]?.kind;
    if (kind === "finish") finishes = true;
    else if (kind === "stats") {
      count++;
      last = i;
    }
  }
  if (count === 0 || (count === 1 && !finishes)) return changes;
  return changes.filter((change, i) => change.kind !== "stats" || (!finishes && i === last));
}
