import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** The documented bounds (README, "API in brief"): a page's JSON, a session's metadata. */
const PAGE_BYTES = 1024 * 1024;
const METADATA_MAX_BYTES = 16 * 1024;
const METADATA_MAX_KEYS = 64;

const KEY_A = "key-a-0123456789abcdef";
const asA = { authorization: `Bearer ${KEY_A}` };

/**
 * As the attacker did: items each within every limit, whose combined size passes a page's
 * budget, listed with the largest `limit`. Before, one page held them all (200 sessions of
 * 1 MB metadata: a 200 MB page in the server's memory per connection).
 */
describe("list pages are bounded in bytes, not only in count", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY_A } });
  });
  afterAll(() => server?.close());

  /** Every page of `path` (template `template`) from its first on: each body's size and items. */
  async function allPages(path: string, template: string) {
    const pages: { bytes: number; ids: string[]; nextCursor: string | null }[] = [];
    for (let cursor: string | null = null; pages.length === 0 || cursor !== null; ) {
      const url = `${server.url}${path}?limit=200${cursor === null ? "" : `&cursor=${cursor}`}`;
      const res = await fetch(url, { headers: asA });
      const text = await res.text();
      expect(res.status, text.slice(0, 200)).toBe(200);
      const body = JSON.parse(text);
      validateResponse({ method: "GET", path: template, status: 200, body });
      cursor = body.nextCursor;
      pages.push({
        bytes: Buffer.byteLength(text),
        ids: body.items.map((i: { id: string }) => i.id),
        nextCursor: cursor,
      });
      expect(pages.length).toBeLessThan(50);
    }
    return pages;
  }

  it("GET /sessions?limit=200 over sessions of 1.9 MB answers pages under PAGE_BYTES; the cursors give every session once, newest first", async () => {
    const created: string[] = [];
    // 12 sessions of a 150 KB system prompt and metadata at its cap: ~1.9 MB in all.
    for (let i = 0; i < 12; i++) {
      const metadata = { n: i, note: "m".repeat(METADATA_MAX_BYTES - 40) };
      const res = await server.request("POST", "/sessions", {
        body: { system: `${i}`.padEnd(150_000, "s"), metadata },
        headers: asA,
      });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
      created.push(res.body.id);
    }
    const pages = await allPages("/sessions", "/sessions");
    expect(pages.length).toBeGreaterThan(1);
    for (const page of pages) expect(page.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    for (const page of pages.slice(0, -1)) expect(page.nextCursor).toBe(page.ids.at(-1));
    expect(pages.flatMap((p) => p.ids)).toEqual([...created].reverse());
  });

  it("a session whose text is mostly escapes (JSON six times its stored size) is still bounded: one a page", async () => {
    // 150,000 control characters: 150 KB stored, 900 KB as JSON. The stored sizes say six fit.
    const keyB = "key-b-0123456789abcdef";
    const other = await startTestServer({ env: { AGENT_API_KEYS: keyB } });
    try {
      const created: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await other.request("POST", "/sessions", {
          body: { system: "\u0001".repeat(150_000) },
          headers: { authorization: `Bearer ${keyB}` },
        });
        expect(res.status).toBe(201);
        created.push(res.body.id);
      }
      const sizes: number[] = [];
      const ids: string[] = [];
      for (let cursor: string | null = null; sizes.length === 0 || cursor !== null; ) {
        const res = await fetch(`${other.url}/sessions?limit=200${cursor === null ? "" : `&cursor=${cursor}`}`, {
          headers: { authorization: `Bearer ${keyB}` },
        });
        const text = await res.text();
        const body = JSON.parse(text);
        sizes.push(Buffer.byteLength(text));
        ids.push(...body.items.map((s: { id: string }) => s.id));
        cursor = body.nextCursor;
      }
      expect(sizes).toHaveLength(3);
      for (const size of sizes) expect(size).toBeLessThanOrEqual(PAGE_BYTES);
      expect(ids).toEqual([...created].reverse());
    } finally {
      await other.close();
    }
  });

  it("GET /sessions/{id}/messages and /runs?limit=200 over runs of large inputs and replies: pages under PAGE_BYTES, every item once, in order", async () => {
    const session = (await server.request("POST", "/sessions", { body: {}, headers: asA })).body;
    const runs: string[] = [];
    // 4 runs, each a 300 KB input and a 300 KB reply: 2.4 MB of messages, 1.2 MB of runs.
    for (let i = 0; i < 4; i++) {
      server.upstream.enqueue({ text: `reply ${i} `.padEnd(300_000, "r") });
      const res = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
        body: { input: `input ${i} `.padEnd(300_000, "i") },
        headers: asA,
      });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      expect(res.body.run.stopReason).toBe("complete");
      runs.push(res.body.run.id);
    }
    const messagePages = await allPages(`/sessions/${session.id}/messages`, "/sessions/{id}/messages");
    expect(messagePages.length).toBeGreaterThanOrEqual(3);
    for (const page of messagePages) expect(page.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    const history = (await server.ctx.store.messages.history(session.id)).map((m) => m.id);
    expect(history).toHaveLength(8);
    expect(messagePages.flatMap((p) => p.ids)).toEqual(history);

    const runPages = await allPages(`/sessions/${session.id}/runs`, "/sessions/{id}/runs");
    expect(runPages.length).toBeGreaterThan(1);
    for (const page of runPages) expect(page.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    expect(runPages.flatMap((p) => p.ids)).toEqual([...runs].reverse());
  });

  it(`metadata over ${METADATA_MAX_BYTES} bytes as JSON, or with more than ${METADATA_MAX_KEYS} keys, is 400 naming the field; at the caps it is kept`, async () => {
    const post = (metadata: unknown) => server.request("POST", "/sessions", { body: { metadata }, headers: asA });
    const refusals = [
      // The attacker's 1 MB, one byte over, and many small keys.
      { note: "x".repeat(1_000_000) },
      { note: "x".repeat(METADATA_MAX_BYTES - 11 + 1) },
      Object.fromEntries(Array.from({ length: METADATA_MAX_KEYS + 1 }, (_, i) => [`k${i}`, i])),
    ];
    for (const metadata of refusals) {
      const res = await post(metadata);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_FAILED");
      expect(res.body.error.message).toContain("metadata");
      expect(res.body.error.details).toEqual([expect.objectContaining({ in: "body", path: "metadata" })]);
      validateResponse({ method: "POST", path: "/sessions", status: 400, body: res.body });
    }
    // `{"note":"..."}` is 11 bytes besides the value: exactly at the cap.
    const atCap = { note: "x".repeat(METADATA_MAX_BYTES - 11) };
    expect(Buffer.byteLength(JSON.stringify(atCap))).toBe(METADATA_MAX_BYTES);
    const kept = await post(atCap);
    expect(kept.status).toBe(201);
    expect(kept.body.metadata).toEqual(atCap);
    const manyKeys = Object.fromEntries(Array.from({ length: METADATA_MAX_KEYS }, (_, i) => [`k${i}`, "é".repeat(50)]));
    expect((await post(manyKeys)).status).toBe(201);
  });
});
