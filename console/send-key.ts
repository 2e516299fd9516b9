import { newIdempotencyKey } from "./api.js";

/** A prompt's start: the view it was sent from, its text, its Idempotency-Key. */
interface Sent {
  view: number;
  input: string;
  key: string;
}

/**
 * The Idempotency-Key of the start whose POST got no answer (see `unanswered`: the run may have
 * started all the same). Sending the same prompt again from the same view reuses it, so the
 * server answers with the run the first POST started (201, `Idempotent-Replayed`), or starts it
 * if it never came: the prompt runs once. Another prompt, or another view, gets a new key; the
 * key kept is dropped once a start of its view is answered.
 */
export class SendKey {
  private kept: Sent | null = null;

  /** The key to send `input` from `view` under: the one kept for them, else a new one. */
  keyFor({ view, input }: { view: number; input: string }): string {
    const kept = this.kept;
    return kept && kept.view === view && kept.input === input ? kept.key : newIdempotencyKey();
  }

  /** Keeps the key of a start that got no answer, for a re-send of its prompt. */
  keep(sent: Sent): void {
    this.kept = sent;
  }

  /** Drops the key kept for `view`: a start of it was answered (a run, or the server's refusal). */
  answered(view: number): void {
    if (this.kept?.view === view) this.kept = null;
  }
}
