/**
 * Keeps the first `headBytes` and the last `tailBytes` of a byte stream of any length,
 * counting what falls in between. Memory stays bounded by the two caps (plus one chunk).
 */
export class HeadTailBuffer {
  private readonly head: Buffer[] = [];
  private headLength = 0;
  private tail: Buffer[] = [];
  private tailLength = 0;
  private total = 0;

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    const headRoom = this.headBytes - this.headLength;
    if (headRoom > 0) {
      const part = rest.subarray(0, headRoom);
      this.head.push(part);
      this.headLength += part.length;
      rest = rest.subarray(part.length);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailLength += rest.length;
    while (this.tailLength > this.tailBytes) {
      const first = this.tail[0] as Buffer;
      const excess = this.tailLength - this.tailBytes;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailLength -= first.length;
      } else {
        // Copy so the dropped part of a large chunk can be freed.
        this.tail[0] = Buffer.from(first.subarray(excess));
        this.tailLength -= excess;
      }
    }
  }

  /** Bytes seen but not kept. */
  get omittedBytes(): number {
    return this.total - this.headLength - this.tailLength;
  }

  /** The kept text; when bytes were dropped, a marker in the middle says how many. */
  text(): string {
    const head = Buffer.concat(this.head);
    const tail = Buffer.concat(this.tail);
    const omitted = this.omittedBytes;
    if (omitted === 0) return Buffer.concat([head, tail]).toString("utf8");
    return `${head.toString("utf8")}\n[... output cut: ${omitted} bytes omitted from the middle (of ${this.total} in all); showing the first ${this.headLength} and the last ${this.tailLength} bytes ...]\n${tail.toString("utf8")}`;
  }
}
