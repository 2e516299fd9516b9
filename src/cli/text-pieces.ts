/** Pieces this many characters long or longer are kept as they are. */
const BLOCK_CHARS = 64 * 1024;
/** At most this many small pieces are kept apart before they are joined into one block. */
const SMALL_PIECES = 256;

/**
 * Text gathered piece by piece (a line over many chunks, a frame of many `data:` lines),
 * joined once at the end. Small pieces are joined into blocks as they come, so what is kept
 * costs about what its characters do, however small the pieces (a string per piece costs
 * tens of bytes), and each character is copied at most twice.
 */
export class TextPieces {
  #blocks: string[] = [];
  #small: string[] = [];
  #smallChars = 0;
  #length = 0;

  /** The characters gathered so far. */
  get length(): number {
    return this.#length;
  }

  push(text: string): void {
    this.#length += text.length;
    if (text.length >= BLOCK_CHARS) {
      this.#flush();
      this.#blocks.push(text);
      return;
    }
    this.#small.push(text);
    this.#smallChars += text.length;
    if (this.#small.length >= SMALL_PIECES || this.#smallChars >= BLOCK_CHARS) this.#flush();
  }

  /** All the text, in order; the pieces start empty again. */
  take(): string {
    this.#flush();
    const text = this.#blocks.length === 1 ? (this.#blocks[0] as string) : this.#blocks.join("");
    this.#blocks = [];
    this.#length = 0;
    return text;
  }

  #flush(): void {
    if (this.#small.length > 0) this.#blocks.push(this.#small.join(""));
    this.#small = [];
    this.#smallChars = 0;
  }
}
