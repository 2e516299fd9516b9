// The send-time stamps the fake upstream puts in streamed tokens (FAKE_TEXT_TOKENS): each
// token's text is "~<ms since the epoch, 3 decimals> ". A reader in another process takes
// each token's latency (upstream send -> read here) from the text it received.

/** The wall clock in ms, as the fake upstream stamps it (sub-millisecond, comparable across processes). */
export const wallMs = () => performance.timeOrigin + performance.now();

const STAMP = /~(\d{10,}\.\d{3}) /g;

/** Pushes the latency of each stamped token in `text` (read at `now`) onto `into`; returns how many. */
export function stampLatencies(text, now, into) {
  let count = 0;
  for (const match of text.matchAll(STAMP)) {
    into.push(now - Number(match[1]));
    count++;
  }
  return count;
}

/** The p-th percentile (nearest rank) of `xs`, NaN when empty; sorts `xs` in place. */
export function percentile(xs, p, sorted = false) {
  if (xs.length === 0) return Number.NaN;
  if (!sorted) xs.sort((a, b) => a - b);
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))];
}
