/** How many leading bytes are inspected to decide whether a file is binary. */
export const BINARY_SNIFF_BYTES = 8192;

/** A file is treated as binary when its first BINARY_SNIFF_BYTES contain a NUL byte (as git does). */
export function looksBinary(head: Uint8Array): boolean {
  return head.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** A byte count for people: "512 B", "2.0 KiB", "50.0 MiB", "4.0 GiB", "16.0 TiB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let unit = 0;
  let scaled = bytes / 1024;
  while (scaled >= 1024 && unit < units.length - 1) {
    scaled /= 1024;
    unit++;
  }
  return `${scaled.toFixed(1)} ${units[unit]}`;
}
