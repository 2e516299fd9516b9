let isoMs = Number.NaN;
let iso = "";

/** The time now as an ISO 8601 string; one string per millisecond, whatever the number of callers in it. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}
