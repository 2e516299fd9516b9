/**
 * The text a run's turn streams, in `node`. Deltas are kept and written at most once per
 * animation frame, as one text node appended after what is there (never rewriting it): a
 * delta costs its own length, however long the text already is, and a fast stream costs the
 * page a write a frame, not one per delta.
 */
export class LiveText {
  private pending: string[] = [];
  private frame: number | null = null;

  constructor(private readonly node: HTMLElement) {}

  /** Empties the text, shown (a new turn) or hidden (`shown` false); deltas not yet written are dropped. */
  reset(shown: boolean): void {
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.pending = [];
    this.node.hidden = !shown;
    this.node.replaceChildren();
  }

  /** Adds `text` at the end; it shows at the next animation frame. */
  append(text: string): void {
    this.pending.push(text);
    this.frame ??= requestAnimationFrame(() => {
      this.frame = null;
      this.node.hidden = false;
      this.node.append(this.pending.join(""));
      this.pending = [];
    });
  }
}
