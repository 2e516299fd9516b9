import type { Store } from "../../src/store/store.js";
import { aroundStore } from "./store-around.js";

const PARTS = ["sessions", "runs", "messages", "events", "toolCalls", "inputs", "steps", "webhooks"] as const;

/**
 * Counts what the store hands back: the JSON length of every result of its reads (and writes)
 * while `counting` is on. A read of a large row counts its size, whatever method made it.
 */
export class ReadBytes {
  counting = false;
  bytes = 0;
  /** The calls counted, each as `part.method` and its result's JSON length. */
  readonly calls: string[] = [];

  /** `store` with its results counted (for startTestServer's `wrapStore`). */
  readonly wrap = (store: Store): Store => {
    let wrapped = store;
    for (const part of PARTS) {
      wrapped = aroundStore(wrapped, part, async (name, _args, call) => {
        const result = await call();
        if (this.counting) {
          const size = JSON.stringify(result ?? null).length;
          this.bytes += size;
          this.calls.push(`${part}.${name} ${size}`);
        }
        return result;
      });
    }
    return wrapped;
  };
}
