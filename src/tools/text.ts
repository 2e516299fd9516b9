/** How many leading bytes are inspected to decide whether a file is binary. */
export const BINARY_SNIFF_BYTES = 8192;

/** A file is treated as binary when its first BINARY_SNIFF_BYTES contain a NUL byte (as git does). */
export function looksBinary(head: Uint8Array): boolean {
  return head.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

/** A byte count for people: "512 B", "2.0 KiB", "50.0 MiB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
