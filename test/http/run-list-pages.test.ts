import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateResponse } from "../helpers/openapi-validator.js";
import { allDeliveries, seedLargeRun } from "../helpers/run-lists.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** The documented bound of a page's JSON (README, "API in brief"). */
const PAGE_BYTES = 1024 * 1024;

const KEY = "key-pages-0123456789abcdef";
const auth = { authorization: `Bearer ${KEY}` };

/**
 * A run's steps, pending approvals and webhook deliveries were each answered whole: every row
 * read, one body of them all, `nextCursor: null`. A run of 100 steps of 16 KiB answered 1.6 MB
 * of steps, one of 40 pending approvals of 60 KB inputs 2.4 MB. They are pages now, as the
 * other lists are: at most `limit` items and 1 MiB, the cursors giving every item once.
 */
describe("a run's steps, pending approvals and webhook deliveries come in pages", () => {
  let server: TestServer;
  let runId: string;
  let callIds: string[];
  beforeAll(async () => {
    // The worker polls seldom: the deliveries stay as they were written while they are paged.
    server = await startTestServer({ env: { AGENT_API_KEYS: KEY, WEBHOOK_POLL_MS: "60000" } });
    const session = await server.request("POST", "/sessions", { body: {}, headers: auth });
    expect(session.status).toBe(201);
    runId = "run_pages0000000000000000001";
    callIds = await seedLargeRun(server.ctx.store, {
      sessionId: session.body.id,
      runId,
      steps: 100,
      stepBytes: 16_000,
      approvals: 120,
      inputBytes: 60_000,
    });
  }, 60_000);
  afterAll(() => server?.close());

  /** Every page of `path` (documented as `template`) from its first on: each body's size, keys and cursor. */
  async function allPages(path: string, template: string, { limit, key }: { limit?: number; key: string }) {
    const pages: { bytes: number; keys: unknown[]; nextCursor: string | null }[] = [];
    for (let cursor: string | null = null; pages.length === 0 || cursor !== null; ) {
      const query = new URLSearchParams();
      if (limit !== undefined) query.set("limit", String(limit));
      if (cursor !== null) query.set("cursor", cursor);
      const res = await fetch(`${server.url}${path}?${query}`, { headers: auth });
      const text = await res.text();
      expect(res.status, text.slice(0, 200)).toBe(200);
      const body = JSON.parse(text);
      validateResponse({ method: "GET", path: template, status: 200, body });
      cursor = body.nextCursor;
      pages.push({
        bytes: Buffer.byteLength(text),
        keys: body.items.map((i: Record<string, unknown>) => i[key]),
        nextCursor: cursor,
      });
      expect(pages.length).toBeLessThan(100);
    }
    return pages;
  }

  it("GET /runs/{id}/steps?limit=200 over 1.6 MB of steps: pages within 1 MiB, every step once, in turn order", async () => {
    const pages = await allPages(`/runs/${runId}/steps`, "/runs/{id}/steps", { limit: 200, key: "turn" });
    expect(pages.length).toBeGreaterThanOrEqual(2);
    for (const page of pages) expect(page.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    expect(pages.flatMap((p) => p.keys)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    // Without a limit, a page holds at most the default 50.
    const first = await server.request("GET", `/runs/${runId}/steps`, { headers: auth });
    expect(first.body.items).toHaveLength(50);
    expect(first.body.nextCursor).not.toBeNull();
  });

  it("GET /runs/{id}/approvals over 7 MB of pending inputs: pages within 1 MiB, every call once, in the model's order", async () => {
    const pages = await allPages(`/runs/${runId}/approvals`, "/runs/{id}/approvals", { limit: 200, key: "toolCallId" });
    expect(pages.length).toBeGreaterThanOrEqual(7);
    for (const page of pages) expect(page.bytes).toBeLessThanOrEqual(PAGE_BYTES);
    expect(pages.flatMap((p) => p.keys)).toEqual(callIds);
    const [first] = (await server.request("GET", `/runs/${runId}/approvals?limit=1`, { headers: auth })).body.items;
    expect(first).toMatchObject({ toolCallId: callIds[0], tool: "write_file", status: "pending" });
    expect(first.input.content).toHaveLength(60_000);
  });

  it("GET /runs/{id}/webhooks: pages of `limit` deliveries (50 by default), every delivery once, in event order", async () => {
    const pages = await allPages(`/runs/${runId}/webhooks`, "/runs/{id}/webhooks", { key: "id" });
    expect(pages.map((p) => p.keys.length)).toEqual([50, 50, 20]);
    const ids = pages.flatMap((p) => p.keys);
    const stored = (await allDeliveries(server.ctx.store, runId)).map((d) => d.id);
    expect(stored).toHaveLength(120);
    expect(ids).toEqual(stored);
    const small = await allPages(`/runs/${runId}/webhooks`, "/runs/{id}/webhooks", { limit: 7, key: "id" });
    expect(small).toHaveLength(18);
    expect(small.flatMap((p) => p.keys)).toEqual(stored);
  });

  it("a cursor that is not one of these lists' is 400 INVALID_CURSOR; one past the end is an empty last page", async () => {
    for (const list of ["steps", "approvals", "webhooks"]) {
      for (const cursor of ["abc", "1.5", "-1", "1e3", "99999999999999999999"]) {
        const res = await server.request("GET", `/runs/${runId}/${list}?cursor=${cursor}`, { headers: auth });
        expect(res.status, `${list} ${cursor}`).toBe(400);
        expect(res.body.error.code).toBe("INVALID_CURSOR");
        validateResponse({ method: "GET", path: `/runs/{id}/${list}`, status: 400, body: res.body });
      }
      const past = await server.request("GET", `/runs/${runId}/${list}?cursor=100000`, { headers: auth });
      expect(past.status).toBe(200);
      expect(past.body).toEqual({ items: [], nextCursor: null });
    }
  });
});
