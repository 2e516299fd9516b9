/**
 * The same text given to both stores reads back the same from both. A JSON body may carry any
 * string, lone UTF-16 surrogates (`"\ud800"`) among them; both backends store UTF-8, so both
 * turn a lone surrogate into U+FFFD, as long as the text has no U+0000.
 *
 * With U+0000 in it (a tool's output, a client's input), the PostgreSQL store keeps the text
 * encoded as `\uFFFF` + JSON.stringify(text) (pg-text.ts encodeText), and JSON.stringify writes
 * a lone surrogate as the escape `\ud800`: PostgreSQL then gives the lone surrogate back, while
 * SQLite gives U+FFFD. Whether a surrogate survives depends on the backend and on whether the
 * text also holds a NUL (and an idempotency key or a steered input compared in the database
 * matches on one backend and not on the other).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { type OpenedBackend, STORE_BACKENDS } from "../helpers/store-backends.js";

/** Pieces of text the stores treat specially: NUL, the pg store's mark, lone surrogates, an astral character. */
const PIECES = ["a", " ", "\u0000", "\uFFFF", "\uD800", "\uDFFF", "\uD83D\uDE00", "é", '"', "\\"];
const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 8 }).map((parts) => parts.join(""));

describe("text through both stores", () => {
  const opened: OpenedBackend[] = [];
  let stores: Store[] = [];
  let n = 0;

  beforeAll(async () => {
    for (const backend of STORE_BACKENDS) opened.push(await backend.open());
    stores = opened.map((o) => o.store);
  });
  afterAll(async () => {
    for (const o of opened) await o.dispose();
  });

  it("a session's system prompt and a run's input and key read back the same from SQLite and PostgreSQL", async () => {
    await fc.assert(
      fc.asyncProperty(text, text, async (system, input) => {
        const sessionId = `ses_txt_${String(++n).padStart(5, "0")}`;
        const runId = `run_txt_${String(n).padStart(5, "0")}`;
        const read = await Promise.all(
          stores.map(async (store) => {
            await seedSession(store, { id: sessionId, system });
            await store.runs.create(runRecord({ id: runId, sessionId, input, idempotencyKey: `k${input}` }), []);
            const run = await store.runs.get(runId);
            return {
              system: (await store.sessions.get(sessionId))?.system,
              input: run?.input,
              key: run?.idempotencyKey,
              keyFindsIt: (await store.runs.keyed(sessionId, `k${input}`, input))?.sameInput ?? null,
            };
          }),
        );
        // As JSON, where a lone surrogate shows as its escape and U+FFFD as itself.
        const [sqlite, postgres] = read.map((r) => JSON.stringify(r));
        expect(postgres, `system ${JSON.stringify(system)}, input ${JSON.stringify(input)}`).toBe(sqlite);
      }),
      { numRuns: 40, examples: [["a\u0000\uD800", "\uDFFF\u0000"]] },
    );
  });
});
