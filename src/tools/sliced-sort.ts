import { performance } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";

/** Items sorted in one go: a run this long sorts in well under a millisecond. */
const RUN = 1024;

/**
 * Sorts `items` (stable, by `compare`) without holding the event loop for more than about
 * `sliceMs` at a time: runs of RUN items are sorted in place, then merged pass by pass, the
 * loop turning whenever a slice has run `sliceMs`. Resolves to the sorted array (`items` or
 * a copy of it). Meant for long arrays whose comparisons may be slow (100,000 names sharing
 * a 250-character prefix take ~0.4 s to sort in one go).
 */
export async function slicedSort<T>(items: T[], compare: (a: T, b: T) => number, sliceMs: number): Promise<T[]> {
  if (items.length <= RUN) return items.sort(compare);
  let turned = performance.now();
  const maybeTurn = async (): Promise<void> => {
    if (performance.now() - turned <= sliceMs) return;
    await nextTurn();
    turned = performance.now();
  };
  const n = items.length;
  for (let from = 0; from < n; from += RUN) {
    const run = items.slice(from, from + RUN).sort(compare);
    for (let i = 0; i < run.length; i++) items[from + i] = run[i] as T;
    await maybeTurn();
  }
  let source = items;
  let target: T[] = new Array(n);
  for (let width = RUN; width < n; width *= 2) {
    for (let left = 0; left < n; left += 2 * width) {
      const middle = Math.min(left + width, n);
      const right = Math.min(left + 2 * width, n);
      let i = left;
      let j = middle;
      for (let k = left; k < right; k++) {
        // Equal items keep their order: the left run's first.
        if (j >= right || (i < middle && compare(source[i] as T, source[j] as T) <= 0)) target[k] = source[i++] as T;
        else target[k] = source[j++] as T;
        if ((k & 1023) === 1023) await maybeTurn();
      }
    }
    [source, target] = [target, source];
  }
  return source;
}
