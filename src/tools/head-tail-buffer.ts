/** Whether `byte` continues a UTF-8 character (10xxxxxx) rather than starting one. */
const continuesCharacter = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80;

/** The most continuation bytes a UTF-8 character has: a cut moves at most this far. */
const MAX_CONTINUATION_BYTES = 3;

/**
 * Keeps the first `headBytes` and the last `tailBytes` of a byte stream of any length,
 * counting what falls in between. Memory stays bounded by the two caps (plus one chunk).
 * When the middle is cut, the cuts fall between whole UTF-8 characters: the head's end moves
 * back and the tail's start forward past continuation bytes (at most 3 each, so bytes that are
 * not UTF-8 move them no further), and the bytes passed over count as omitted, in
 * `omittedBytes` and in the sizes the marker states.
 */
export class HeadTailBuffer {
  private readonly head: Buffer[] = [];
  private headLength = 0;
  private tail: Buffer[] = [];
  private tailLength = 0;
  private total = 0;
  /** The stream's first byte past the head: whether the head's end falls inside a character. */
  private firstAfterHead: number | undefined;

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
    this.firstAfterHead ??= rest[0];
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

  /** Bytes seen but not shown (the cut middle, with any bytes of a character it split). */
  get omittedBytes(): number {
    return this.kept().omitted;
  }

  /** The kept text; when bytes were dropped, a marker in the middle says how many. */
  text(): string {
    const { head, tail, omitted } = this.kept();
    if (omitted === 0) return Buffer.concat([head, tail]).toString("utf8");
    return `${head.toString("utf8")}\n[... output cut: ${omitted} bytes omitted from the middle (of ${this.total} in all); showing the first ${head.length} and the last ${tail.length} bytes ...]\n${tail.toString("utf8")}`;
  }

  /** The head and the tail shown: when the middle was cut, each ends at a character boundary. */
  private kept(): { head: Buffer; tail: Buffer; omitted: number } {
    const head = Buffer.concat(this.head);
    const tail = Buffer.concat(this.tail);
    if (this.total === head.length + tail.length) return { head, tail, omitted: 0 };
    // The head ends inside a character while the byte after its end continues one.
    let end = head.length;
    while (
      end > 0 &&
      head.length - end < MAX_CONTINUATION_BYTES &&
      continuesCharacter(end === head.length ? this.firstAfterHead : head[end])
    ) {
      end--;
    }
    // The tail starts inside a character while its first byte continues one.
    let start = 0;
    while (start < tail.length && start < MAX_CONTINUATION_BYTES && continuesCharacter(tail[start])) start++;
    const shown = { head: head.subarray(0, end), tail: tail.subarray(start) };
    return { ...shown, omitted: this.total - shown.head.length - shown.tail.length };
  }
}
