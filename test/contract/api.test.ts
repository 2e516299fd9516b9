/**
 * Contract suite: drives a real server through every route and every status openapi.yaml
 * documents, validating each response (and each SSE event) against the spec. The last
 * test asserts that the whole spec was exercised, so a documented but untested status,
 * or a new route, fails here.
 */
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FaultyStore } from "../fakes/faulty-store.js";
import { gate } from "../fakes/gate.js";
import { freePort } from "../helpers/child-server.js";
import {
  documentedEventTypes,
  documentedOperations,
  specPath,
  validatedEventTypes,
  validatedResponses,
  validateSchema,
} from "../helpers/openapi-validator.js";
import { runRecord } from "../helpers/seed.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { recorded } from "../providers/replay.js";
import { call, stream, validatedStream } from "./support.js";

const KEY_A = "contract-key-aaaaaaaaaaaa";
const KEY_B = "contract-key-bbbbbbbbbbbb";
const LONG_ID = "x".repeat(65);
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Dummy values for every path template parameter (enough for answers decided before the handler). */
const DUMMY = { id: "ses_or_run_unknown", toolCallId: "call_unknown", chatId: "chat_unknown" };

let server: TestServer;
let faulty: FaultyStore;

async function createSession(body?: unknown): Promise<string> {
  const res = await call(server, "POST", "/sessions", body === undefined ? {} : { body });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** Releases a scripted model reply that is held open. */
describe.each(["sqlite", "postgres"] as const)(
  "contract on %s: sessions, runs, events, approvals, tools",
  (backend) => {
    beforeAll(async () => {
      server = await startTestServer({
        backend,
        env: { BODY_LIMIT_BYTES: "2048", CHAT_BODY_LIMIT_BYTES: "2048" },
        wrapStore: (store) => {
          faulty = new FaultyStore(store);
          return faulty.store;
        },
      });
    });
    afterAll(async () => {
      await server.close();
    });

    it("creates, gets, lists (paginated) sessions; unknown ids are 404", async () => {
      const plain = await call(server, "POST", "/sessions");
      expect(plain.status).toBe(201);
      expect(plain.body).toMatchObject({ activeRunId: null, workspaceShared: false, approval: null });

      const full = await call(server, "POST", "/sessions", {
        body: {
          system: "be brief",
          model: "fake-model",
          tools: ["list_files", "write_file"],
          approval: { default: "ask", tools: { list_files: "allow" } },
          workspace: "contract-shared",
          metadata: { team: "contract", n: 1 },
        },
      });
      expect(full.status).toBe(201);
      expect(full.body).toMatchObject({
        workspace: "contract-shared",
        workspaceShared: true,
        tools: ["list_files", "write_file"],
      });

      const fromNull = await call(server, "POST", "/sessions", { body: null });
      expect(fromNull.status).toBe(201);

      const one = await call(server, "GET", "/sessions/{id}", { params: { id: full.body.id } });
      expect(one.status).toBe(200);
      expect(one.body).toEqual(full.body);

      const first = await call(server, "GET", "/sessions", { query: "limit=2" });
      expect(first.status).toBe(200);
      expect(first.body.items).toHaveLength(2);
      expect(first.body.items[0].id).toBe(fromNull.body.id); // newest first
      expect(typeof first.body.nextCursor).toBe("string");
      const second = await call(server, "GET", "/sessions", { query: `limit=2&cursor=${first.body.nextCursor}` });
      expect(second.body.items.map((s: { id: string }) => s.id)).toContain(plain.body.id);

      const missing = await call(server, "GET", "/sessions/{id}", { params: { id: "ses_missing" } });
      expect(missing.status).toBe(404);
      expect(missing.body.error).toEqual({
        code: "NOT_FOUND",
        message: "session ses_missing not found",
        details: { session: "ses_missing" },
      });
      for (const template of ["/sessions/{id}/messages", "/sessions/{id}/runs"]) {
        expect((await call(server, "GET", template, { params: { id: "ses_missing" } })).status).toBe(404);
      }
      expect((await call(server, "DELETE", "/sessions/{id}", { params: { id: "ses_missing" } })).status).toBe(404);
      const noSession = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: "ses_missing" },
        body: { input: "hi" },
      });
      expect(noSession.status).toBe(404);
    });

    it("answers invalid requests 400 with a precise error code", async () => {
      const invalid = await call(server, "POST", "/sessions", { body: { nope: 1 } });
      expect(invalid.status).toBe(400);
      expect(invalid.body.error.code).toBe("VALIDATION_FAILED");
      expect(invalid.body.error.details).toEqual([{ in: "body", path: "(root)", message: expect.any(String) }]);

      const unknownTool = await call(server, "POST", "/sessions", { body: { tools: ["teleport"] } });
      expect(unknownTool.body.error.code).toBe("UNKNOWN_TOOL");
      expect(unknownTool.body.error.details.available).toContain("shell");
      // A misspelt tool in an approval override is refused, not left on its default (a "deny" lost).
      const misspelt = await call(server, "POST", "/sessions", { body: { approval: { tools: { Shell: "deny" } } } });
      expect(misspelt.status).toBe(400);
      expect(misspelt.body.error).toMatchObject({ code: "UNKNOWN_TOOL", message: expect.stringContaining("Shell") });
      const workspace = await call(server, "POST", "/sessions", { body: { workspace: ".hidden" } });
      expect(workspace.body.error.code).toBe("INVALID_WORKSPACE");
      const badLimit = await call(server, "GET", "/sessions", { query: "limit=0" });
      expect(badLimit.body.error.details[0]).toMatchObject({ in: "querystring", path: "limit" });

      const session = await createSession();
      const cursor = await call(server, "GET", "/sessions/{id}/messages", {
        params: { id: session },
        query: "cursor=abc",
      });
      expect(cursor.body.error.code).toBe("INVALID_CURSOR");
      const misspeltRun = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "hi", approval: { tools: { sehll: "deny" } } },
      });
      expect(misspeltRun.status).toBe(400);
      expect(misspeltRun.body.error.code).toBe("UNKNOWN_TOOL");
      const emptyInput = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "" },
      });
      expect(emptyInput.body.error).toMatchObject({
        code: "VALIDATION_FAILED",
        message: "body input: input must not be empty",
      });
      const badWait = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        query: "wait=yes",
        body: { input: "x" },
      });
      expect(badWait.body.error.details[0]).toMatchObject({ in: "querystring", path: "wait" });

      // Every route with a path parameter refuses an id over 64 characters.
      for (const op of documentedOperations().filter((o) => o.path.includes("{id}"))) {
        const res = await call(server, op.method, op.path, {
          params: { ...DUMMY, id: LONG_ID },
          ...(op.method === "POST" ? { body: {} } : {}),
        });
        expect(res.status, `${op.method} ${op.path}`).toBe(400);
        expect(res.body.error.code).toBe("VALIDATION_FAILED");
      }
    });

    it("routes that take a body (every POST and DELETE) answer 400 INVALID_JSON, 413 BODY_TOO_LARGE and 415 UNSUPPORTED_MEDIA_TYPE", async () => {
      const bodyRoutes = documentedOperations().filter((o) => o.method === "POST" || o.method === "DELETE");
      expect(bodyRoutes.map((o) => `${o.method} ${o.path}`).sort()).toEqual([
        "DELETE /runs/{id}",
        "DELETE /sessions/{id}",
        "POST /runs/{id}/approvals/{toolCallId}",
        "POST /runs/{id}/stream-token",
        "POST /sessions",
        "POST /sessions/{id}/chat",
        "POST /sessions/{id}/runs",
      ]);
      for (const op of bodyRoutes) {
        const where = `${op.method} ${op.path}`;
        const broken = await call(server, op.method, op.path, {
          params: DUMMY,
          rawBody: '{"input": ',
          contentType: "application/json",
        });
        expect(broken.status, where).toBe(400);
        expect(broken.body.error.code).toBe("INVALID_JSON");
        const large = await call(server, op.method, op.path, {
          params: DUMMY,
          body: { input: "y".repeat(4096), decision: "approve" },
        });
        expect(large.status, where).toBe(413);
        expect(large.body.error.code).toBe("BODY_TOO_LARGE");
        // The chat's own limit (the messages it posts back are larger) is named as such.
        const setting = op.path === "/sessions/{id}/chat" ? "CHAT_BODY_LIMIT_BYTES" : "BODY_LIMIT_BYTES";
        expect(large.body.error.message, where).toMatch(new RegExp(`\\d+ bytes, ${setting}\\)`));
        const xml = await call(server, op.method, op.path, {
          params: DUMMY,
          rawBody: "<input/>",
          contentType: "application/xml",
        });
        expect(xml.status, where).toBe(415);
        expect(xml.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
        expect(xml.body.error.message).toContain("application/json");
      }
    });

    it("an empty body with a JSON Content-Type is no body: DELETE and a bodiless POST /sessions work", async () => {
      const created = await call(server, "POST", "/sessions", { rawBody: "", contentType: "application/json" });
      expect(created.status).toBe(201);
      const deleted = await call(server, "DELETE", "/sessions/{id}", {
        params: { id: created.body.id },
        rawBody: "",
        contentType: "application/json",
      });
      expect(deleted.status).toBe(204);
      // A route whose body is required still says what is missing.
      const noInput = await call(server, "POST", "/sessions/{id}/runs", {
        params: DUMMY,
        rawBody: "",
        contentType: "application/json",
      });
      expect(noInput.status).toBe(400);
      expect(noInput.body.error.code).toBe("VALIDATION_FAILED");
    });

    it("a request the HTTP parser refuses (a malformed Content-Length) still gets the error envelope", async () => {
      const { port } = new URL(server.url);
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), "127.0.0.1", () => {
          socket.end(
            "POST /sessions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: abc\r\n\r\n{}",
          );
        });
        let text = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk) => {
          text += chunk;
        });
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 400 /);
      const body = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));
      expect(body).toEqual({ error: { code: "INVALID_CONTENT_LENGTH", message: expect.any(String) } });
      validateSchema("ErrorResponse", body);
    });

    it("a session's messages page newest first with order=newest, each cursor going back", async () => {
      const session = await call(server, "POST", "/sessions");
      const id = session.body.id;
      for (const answer of ["first answer", "second answer"]) {
        server.upstream.enqueue({ text: answer });
        const run = await call(server, "POST", "/sessions/{id}/runs", {
          params: { id },
          query: "wait=true",
          body: { input: `asked for ${answer}` },
        });
        expect(run.status).toBe(200);
      }
      const newest = await call(server, "GET", "/sessions/{id}/messages", {
        params: { id },
        query: "order=newest&limit=3",
      });
      expect(newest.status).toBe(200);
      expect(newest.body.items.map((m: { content: string }) => m.content)).toEqual([
        "second answer",
        "asked for second answer",
        "first answer",
      ]);
      expect(newest.body.nextCursor).toBe(String(newest.body.items[2].seq));
      const older = await call(server, "GET", "/sessions/{id}/messages", {
        params: { id },
        query: `order=newest&limit=3&cursor=${newest.body.nextCursor}`,
      });
      expect(older.body).toEqual({
        items: [expect.objectContaining({ content: "asked for first answer" })],
        nextCursor: null,
      });
      // The default stays oldest first.
      const oldest = await call(server, "GET", "/sessions/{id}/messages", { params: { id }, query: "limit=1" });
      expect(oldest.body.items[0].content).toBe("asked for first answer");
      const sideways = await call(server, "GET", "/sessions/{id}/messages", {
        params: { id },
        query: "order=sideways",
      });
      expect(sideways.status).toBe(400);
      expect(sideways.body.error.details[0]).toMatchObject({ in: "querystring", path: "order" });
    });

    it("a cursor past any key a list can hold is 400 INVALID_CURSOR, not a database error", async () => {
      const session = await call(server, "POST", "/sessions");
      server.upstream.enqueue({ text: "done" });
      const run = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session.body.id },
        query: "wait=true",
        body: { input: "hi" },
      });
      const past = "2147483648"; // PostgreSQL stores seqs, turns and ordinals as INTEGER
      for (const [path, params, query] of [
        ["/sessions/{id}/messages", { id: session.body.id }, `cursor=${past}`],
        ["/sessions/{id}/messages", { id: session.body.id }, `order=newest&cursor=${past}`],
        ["/runs/{id}/steps", { id: run.body.run.id }, `cursor=${past}`],
        ["/runs/{id}/approvals", { id: run.body.run.id }, `cursor=${past}`],
        ["/runs/{id}/webhooks", { id: run.body.run.id }, `cursor=${past}`],
      ] as const) {
        const res = await call(server, "GET", path, { params, query });
        expect(res.status, `${path}?${query}`).toBe(400);
        expect(res.body.error.code, path).toBe("INVALID_CURSOR");
      }
      const last = await call(server, "GET", "/sessions/{id}/messages", {
        params: { id: session.body.id },
        query: "cursor=2147483647",
      });
      expect(last.body).toEqual({ items: [], nextCursor: null });
    });

    it("a list cursor this API did not give is 400 INVALID_CURSOR on every list", async () => {
      const session = await call(server, "POST", "/sessions");
      for (const [path, params] of [
        ["/sessions", {}],
        ["/sessions/{id}/runs", { id: session.body.id }],
        ["/sessions/{id}/messages", { id: session.body.id }],
      ] as const) {
        const res = await call(server, "GET", path, { params, query: "cursor=zzz" });
        expect(res.status, path).toBe(400);
        expect(res.body.error.code, path).toBe("INVALID_CURSOR");
      }
      // A cursor the API gave still pages.
      const page = await call(server, "GET", "/sessions", { query: "limit=1" });
      const next = await call(server, "GET", "/sessions", { query: `limit=1&cursor=${page.body.nextCursor}` });
      expect(next.status).toBe(200);
    });

    it("an unknown route or method is a 404 in the error envelope", async () => {
      for (const [method, path] of [
        ["GET", "/nope"],
        ["PUT", "/sessions"],
        ["POST", "/runs/run_x"],
      ] as const) {
        const res = await fetch(`${server.url}${path}`, { method });
        expect(res.status).toBe(404);
        const body = await res.json();
        validateSchema("NotFoundError", body);
        expect(body.error.message).toBe(`no route ${method} ${path}`);
      }
    });

    it("provider state: ?reasoning=true streams reasoning.delta; an assistant message's metadata (reasoning, refusal) validates", async () => {
      server.upstream.enqueue(recorded("magistral-thinking-parts.chunks.txt"), recorded("openai-gpt-4o-refusal.sse"));
      const session = await createSession();
      const first = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        query: "wait=true",
        body: { input: "2+2?" },
      });
      const events = await validatedStream(
        "GET",
        "/runs/{id}/events",
        await stream(server, "GET", "/runs/{id}/events", {
          params: { id: first.body.run.id },
          query: "reasoning=true",
        }),
      );
      expect(events.map((e) => e.event)).toContain("reasoning.delta");
      await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        query: "wait=true",
        body: { input: "no" },
      });
      const messages = await call(server, "GET", "/sessions/{id}/messages", { params: { id: session } });
      expect(messages.body.items.map((m: { metadata?: unknown }) => m.metadata)).toEqual([
        undefined,
        { reasoning: expect.any(String) },
        undefined,
        { refusal: true },
      ]);
    });

    it("?wait=true answers {run, text}; run, runs, messages, steps, approvals and events read back", async () => {
      server.upstream.enqueue({ text: ["hello ", "there"] });
      const session = await createSession();
      const waited = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        query: "wait=true",
        body: { input: "hi", maxTurns: 3, contextMaxChars: 10_000 },
      });
      expect(waited.status).toBe(200);
      expect(waited.body.text).toBe("hello there");
      expect(waited.body.run).toMatchObject({ status: "finished", stopReason: "complete", error: null, maxTurns: 3 });
      const runId = waited.body.run.id as string;

      const run = await call(server, "GET", "/runs/{id}", { params: { id: runId } });
      expect(run.body).toEqual(waited.body.run);
      const runs = await call(server, "GET", "/sessions/{id}/runs", { params: { id: session } });
      expect(runs.body).toEqual({ items: [waited.body.run], nextCursor: null });

      const page1 = await call(server, "GET", "/sessions/{id}/messages", { params: { id: session }, query: "limit=1" });
      expect(page1.body.items.map((m: { role: string }) => m.role)).toEqual(["user"]);
      expect(page1.body.nextCursor).toBe("1");
      const page2 = await call(server, "GET", "/sessions/{id}/messages", {
        params: { id: session },
        query: `cursor=${page1.body.nextCursor}`,
      });
      expect(page2.body).toMatchObject({
        items: [{ role: "assistant", content: "hello there", seq: 2 }],
        nextCursor: null,
      });

      const steps = await call(server, "GET", "/runs/{id}/steps", { params: { id: runId } });
      expect(steps.body.items).toHaveLength(1);
      expect(steps.body.items[0].model).toMatchObject({
        finishReason: "stop",
        usage: { inputTokens: 10, outputTokens: 5 },
      });
      // Without a target (no WEBHOOK_URL, none named), a run has no deliveries.
      const webhooks = await call(server, "GET", "/runs/{id}/webhooks", { params: { id: runId } });
      expect(webhooks.body).toEqual({ items: [], nextCursor: null });
      const approvals = await call(server, "GET", "/runs/{id}/approvals", { params: { id: runId } });
      expect(approvals.body).toEqual({ items: [], nextCursor: null });

      // Replays: from the start, after Last-Event-ID, after ?after=.
      const all = await validatedStream(
        "GET",
        "/runs/{id}/events",
        await stream(server, "GET", "/runs/{id}/events", { params: { id: runId } }),
      );
      expect(all[0]?.event).toBe("run.started");
      expect(all.at(-1)?.event).toBe("run.finished");
      expect(all.map((e) => e.event)).toEqual(expect.arrayContaining(["turn.started", "text.delta", "message"]));
      const tail = await validatedStream(
        "GET",
        "/runs/{id}/events",
        await stream(server, "GET", "/runs/{id}/events", { params: { id: runId }, headers: { "last-event-id": "2" } }),
      );
      expect(tail.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
      const viaQuery = await validatedStream(
        "GET",
        "/runs/{id}/events",
        await stream(server, "GET", "/runs/{id}/events", { params: { id: runId }, query: "after=3" }),
      );
      expect(viaQuery.map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
      // At the end of a finished run: 204, nothing more will come.
      const past = await call(server, "GET", "/runs/{id}/events", {
        params: { id: runId },
        query: `after=${all.at(-1)?.id}`,
      });
      expect(past.status).toBe(204);
      // A stream token reads the same stream.
      const token = await call(server, "POST", "/runs/{id}/stream-token", { params: { id: runId } });
      expect(token.status).toBe(200);
      const viaToken = await validatedStream(
        "GET",
        "/runs/{id}/events",
        await stream(server, "GET", "/runs/{id}/events", {
          params: { id: runId },
          query: `token=${encodeURIComponent(token.body.token)}`,
        }),
      );
      expect(viaToken.map((e) => e.id)).toEqual(all.map((e) => e.id));

      // Cancelling a finished run is a 200 no-op.
      const cancel = await call(server, "DELETE", "/runs/{id}", { params: { id: runId } });
      expect(cancel.status).toBe(200);
      expect(cancel.body).toEqual(waited.body.run);
    });

    it("Accept: text/event-stream streams the run in the POST response (read-only tool, then text)", async () => {
      server.upstream.enqueue(
        { toolCalls: [{ id: "call_ls", name: "list_files", arguments: ["{", "}"] }] },
        { text: ["nothing ", "here"] },
      );
      const session = await createSession();
      const sse = await stream(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "look" },
      });
      expect(sse.status).toBe(200);
      expect(sse.headers["content-type"]).toMatch(/^text\/event-stream/);
      const events = await validatedStream("POST", "/sessions/{id}/runs", sse);
      expect(events.map((e) => e.event)).toEqual(
        expect.arrayContaining([
          "run.started",
          "turn.started",
          "tool.started",
          "message",
          "text.delta",
          "run.finished",
        ]),
      );
      const roles = events.filter((e) => e.event === "message").map((e) => e.json.message.role);
      expect(roles).toEqual(["user", "assistant", "tool", "assistant"]);
      const toolMessage = events.find((e) => e.event === "message" && e.json.message.role === "tool")?.json.message;
      expect(toolMessage).toMatchObject({ toolCallId: "call_ls", isError: false, metadata: { errorCode: null } });
      const finished = events.at(-1)?.json;
      expect(finished.run).toMatchObject({
        status: "finished",
        stopReason: "complete",
        stats: { toolCalls: 1, turns: 2 },
      });

      const steps = await call(server, "GET", "/runs/{id}/steps", { params: { id: finished.runId } });
      expect(steps.body.items[0].tools).toEqual([expect.objectContaining({ toolCallId: "call_ls", status: "ok" })]);
    });

    it("stop conditions: a planning run shows its plan (plan.updated), stops loop_detected with a stopDetail; a token budget stops budget_exhausted", async () => {
      server.upstream.enqueue(
        {
          toolCalls: [{ id: "call_plan", name: "create_plan", arguments: '{"steps":[{"title":"find the notes"}]}' }],
        },
        { toolCalls: [{ id: "call_r1", name: "read_file", arguments: '{"path":"notes.md"}' }] },
        { toolCalls: [{ id: "call_r2", name: "read_file", arguments: '{ "path": "notes.md" }' }] },
      );
      const session = await call(server, "POST", "/sessions", { body: { planning: true } });
      expect(session.body.planning).toBe(true);
      const sse = await stream(server, "POST", "/sessions/{id}/runs", {
        params: { id: session.body.id },
        body: { input: "read my notes", loopRepeatLimit: 2 },
      });
      const events = await validatedStream("POST", "/sessions/{id}/runs", sse);
      const plan = { steps: [{ title: "find the notes", status: "pending" }] };
      expect(events.find((e) => e.event === "plan.updated")?.json.plan).toEqual(plan);
      const finished = events.at(-1)?.json.run;
      expect(finished).toMatchObject({ stopReason: "loop_detected", planning: true, loopRepeatLimit: 2, plan });
      expect(finished.stopDetail).toBe(
        'stopped after turn 3: read_file {"path":"notes.md"} failed with NOT_FOUND 2 times in a row; ' +
          "check the file name or path (list_files shows what exists)",
      );
      expect((await call(server, "GET", "/runs/{id}", { params: { id: finished.id } })).body).toEqual(finished);
      const steps = await call(server, "GET", "/runs/{id}/steps", { params: { id: finished.id } });
      const [r1, r2] = [steps.body.items[1].tools[0], steps.body.items[2].tools[0]];
      expect(r1.fingerprint).toMatch(/^[0-9a-f]{16}$/);
      expect(r2.fingerprint).toBe(r1.fingerprint);
      expect(steps.body.items[2].context.includedFiles).toEqual([]);

      server.upstream.enqueue({ toolCalls: [{ id: "call_ls2", name: "list_files", arguments: "{}" }] });
      const budget = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: await createSession() },
        query: "wait=true",
        body: { input: "look", maxTokens: 15, maxToolCalls: 5, maxDurationMs: 60_000 },
      });
      expect(budget.body.run).toMatchObject({
        stopReason: "budget_exhausted",
        maxTokens: 15,
        maxToolCalls: 5,
        maxDurationMs: 60_000,
        plan: null,
        stopDetail: "stopped before turn 2: this run used 15 of its 15 tokens; raise maxTokens or start a new run",
      });
      const refused = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session.body.id },
        body: { input: "x", loopRepeatLimit: 1 },
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.details[0]).toMatchObject({ path: "loopRepeatLimit" });
    });

    it("Idempotency-Key replays the first run (201, Idempotent-Replayed); a different input with the same key is 409", async () => {
      const run = gate();
      server.upstream.enqueue({ text: "once", gate: run.wait });
      const session = await createSession();
      const headers = { "idempotency-key": "contract-key-1" };
      const first = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "x" },
        headers,
      });
      expect(first.status).toBe(201);
      expect(first.body.status).toBe("running");
      const again = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "x" },
        headers,
      });
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.headers.get("location")).toBe(`/runs/${first.body.id}`);
      expect(again.body.id).toBe(first.body.id);
      const reused = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "other" },
        headers,
      });
      expect(reused.status).toBe(409);
      expect(reused.body.error).toMatchObject({
        code: "IDEMPOTENCY_KEY_REUSED",
        details: { runId: first.body.id, differs: ["input"] },
      });
      // The whole request counts, not only the input: a retry must not run with other settings.
      const otherSettings = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "x", maxTurns: 50, approval: { default: "allow" } },
        headers,
      });
      expect(otherSettings.status).toBe(409);
      expect(otherSettings.body.error.details.differs).toEqual(["maxTurns", "approval"]);
      const busy = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "two" },
      });
      expect(busy.status).toBe(409);
      expect(busy.body.error).toMatchObject({ code: "SESSION_BUSY", details: { runId: first.body.id } });
      const view = await call(server, "GET", "/sessions/{id}", { params: { id: session } });
      expect(view.body.activeRunId).toBe(first.body.id);
      run.open();
      await server.ctx.manager.waitForFinish(first.body.id);
      expect((await call(server, "GET", "/runs/{id}", { params: { id: first.body.id } })).body.stopReason).toBe(
        "complete",
      );
    });

    it("approve: approval.requested, pending list, decision 200 (twice), conflicting decision 409", async () => {
      server.upstream.enqueue(
        { toolCalls: [{ id: "call_w", name: "write_file", arguments: '{"path":"a.txt","content":"hi"}' }] },
        { text: "written" },
      );
      const session = await createSession();
      const run = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "write" },
      });
      const sse = await stream(server, "GET", "/runs/{id}/events", { params: { id: run.body.id } });
      const requested = await sse.waitFor((e) => e.event === "approval.requested");
      expect(requested.json).toMatchObject({ toolCallId: "call_w", tool: "write_file", input: { path: "a.txt" } });
      const status = await call(server, "GET", "/runs/{id}", { params: { id: run.body.id } });
      expect(status.body.status).toBe("awaiting_approval");
      const pending = await call(server, "GET", "/runs/{id}/approvals", { params: { id: run.body.id } });
      expect(pending.body.items).toEqual([
        expect.objectContaining({ toolCallId: "call_w", tool: "write_file", status: "pending", decidedAt: null }),
      ]);

      const decide = (decision: string) =>
        call(server, "POST", "/runs/{id}/approvals/{toolCallId}", {
          params: { id: run.body.id, toolCallId: "call_w" },
          body: { decision, reason: "looks fine" },
        });
      const approved = await decide("approve");
      expect(approved.status).toBe(200);
      expect(approved.body).toMatchObject({ status: "approved", decisionReason: "looks fine" });
      expect((await decide("approve")).status).toBe(200);
      const conflicting = await decide("deny");
      expect(conflicting.status).toBe(409);
      expect(conflicting.body.error).toMatchObject({ code: "APPROVAL_CONFLICT", details: { decision: "approve" } });

      const events = await validatedStream("GET", "/runs/{id}/events", sse);
      expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(["approval.resolved", "tool.started"]));
      expect(events.at(-1)?.json.run.stopReason).toBe("complete");
      const unknown = await call(server, "POST", "/runs/{id}/approvals/{toolCallId}", {
        params: { id: run.body.id, toolCallId: "nope" },
        body: { decision: "approve" },
      });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.details).toEqual({ approval: "nope" });
    });

    it("deny: the denial is a tool result the model sees, and the run completes", async () => {
      server.upstream.enqueue(
        { toolCalls: [{ id: "call_d", name: "write_file", arguments: '{"path":"b.txt","content":"no"}' }] },
        { text: "understood" },
      );
      const session = await createSession();
      const sse = await stream(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "write b" },
      });
      const requested = await sse.waitFor((e) => e.event === "approval.requested");
      const denied = await call(server, "POST", "/runs/{id}/approvals/{toolCallId}", {
        params: { id: requested.json.runId, toolCallId: "call_d" },
        body: { decision: "deny" },
      });
      expect(denied.status).toBe(200);
      expect(denied.body).toMatchObject({ status: "denied", decisionReason: null });
      const events = await validatedStream("POST", "/sessions/{id}/runs", sse);
      expect(events.find((e) => e.event === "approval.resolved")?.json).toMatchObject({
        decision: "deny",
        reason: null,
      });
      expect(events.map((e) => e.event)).not.toContain("tool.started");
      const result = events.find((e) => e.event === "message" && e.json.message.role === "tool")?.json.message;
      expect(result).toMatchObject({ toolCallId: "call_d", isError: true });
      expect(events.at(-1)?.json.run.stopReason).toBe("complete");
    });

    it("ifBusy: enqueue 201 queued (listed, run.queued), DELETE of it 202 finished, steer 202, an unknown mode 400", async () => {
      const held = gate();
      server.upstream.enqueue(
        { toolCalls: [{ id: "call_w", name: "shell", arguments: '{"command":"true"}' }], gate: held.wait },
        { text: "steered" },
      );
      const params = { id: await createSession({ approval: { tools: { shell: "allow" } } }) };
      const active = await call(server, "POST", "/sessions/{id}/runs", { params, body: { input: "go" } });
      expect(active.status).toBe(201);
      const queued = await call(server, "POST", "/sessions/{id}/runs", {
        params,
        body: { input: "later", ifBusy: "enqueue" },
      });
      expect(queued.status).toBe(201);
      expect(queued.body.status).toBe("queued");
      const listed = await call(server, "GET", "/sessions/{id}/runs", { params });
      expect(listed.body.items.map((r: { status: string }) => r.status)).toEqual(["queued", "running"]);
      expect((await call(server, "GET", "/runs/{id}", { params: { id: queued.body.id } })).body.status).toBe("queued");
      const sse = await stream(server, "GET", "/runs/{id}/events", { params: { id: queued.body.id } });
      const cancelled = await call(server, "DELETE", "/runs/{id}", { params: { id: queued.body.id } });
      expect(cancelled.status).toBe(202);
      expect(cancelled.body).toMatchObject({ status: "finished", stopReason: "aborted" });
      const events = await validatedStream("GET", "/runs/{id}/events", sse);
      expect(events.map((e) => e.event)).toEqual(["run.queued", "run.finished"]);

      const steering = call(server, "POST", "/sessions/{id}/runs", {
        params,
        body: { input: "and more", ifBusy: "steer" },
      });
      // Stored while the model's reply with the call is held: the run takes it before its next request.
      while ((await server.ctx.store.inputs.pending(active.body.id)).length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      held.open();
      const steered = await steering;
      expect(steered.status).toBe(202);
      expect(steered.body.id).toBe(active.body.id);

      const bad = await call(server, "POST", "/sessions/{id}/runs", { params, body: { input: "x", ifBusy: "wait" } });
      expect(bad.status).toBe(400);
    });

    it("cancel: DELETE answers 202 cancelling, run.finished aborted follows, then 200 and 409 RUN_FINISHED", async () => {
      server.upstream.enqueue({ toolCalls: [{ id: "call_s", name: "shell", arguments: '{"command":"touch ran"}' }] });
      const session = await createSession();
      const run = await call(server, "POST", "/sessions/{id}/runs", { params: { id: session }, body: { input: "go" } });
      const sse = await stream(server, "GET", "/runs/{id}/events", { params: { id: run.body.id } });
      await sse.waitFor((e) => e.event === "approval.requested");
      const cancel = await call(server, "DELETE", "/runs/{id}", { params: { id: run.body.id } });
      expect(cancel.status).toBe(202);
      // As it is once the request is recorded: cancelling, or already ended by it (aborted).
      if (cancel.body.status === "finished") expect(cancel.body.stopReason).toBe("aborted");
      else expect(cancel.body.status).toBe("cancelling");
      const events = await validatedStream("GET", "/runs/{id}/events", sse);
      expect(events.at(-1)?.json.run).toMatchObject({
        status: "finished",
        stopReason: "aborted",
        stopDetail:
          "stopped in turn 1 at tool call call_s (shell): the run was cancelled by a DELETE /runs/{id} request; start a new run to continue",
      });
      expect((await call(server, "DELETE", "/runs/{id}", { params: { id: run.body.id } })).status).toBe(200);
      const late = await call(server, "POST", "/runs/{id}/approvals/{toolCallId}", {
        params: { id: run.body.id, toolCallId: "call_s" },
        body: { decision: "approve" },
      });
      expect(late.status).toBe(409);
      expect(late.body.error.code).toBe("RUN_FINISHED");
    });

    it("a failing model ends the run with stop reason error and an actionable error", async () => {
      server.upstream.enqueue({
        status: 500,
        errorBody: { error: { message: "upstream exploded", type: "server_error", code: null, param: null } },
      });
      const session = await createSession();
      const res = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        query: "wait=1",
        body: { input: "x" },
      });
      expect(res.body.run).toMatchObject({
        status: "finished",
        stopReason: "error",
        error: { code: "MODEL_UPSTREAM" },
      });
      expect(res.body.run.stopDetail).toMatch(
        /^stopped in turn 1: the model upstream .* upstream exploded \(MODEL_UPSTREAM\); retry later; the model provider failed$/,
      );
      expect(res.body.text).toBeNull();
      const steps = await call(server, "GET", "/runs/{id}/steps", { params: { id: res.body.run.id } });
      expect(steps.body.items[0].model.error).toEqual(expect.any(String));
    });

    it("events: 404 unknown run, 400 bad Last-Event-ID or after; any Accept gets the stream", async () => {
      const unknown = await call(server, "GET", "/runs/{id}/events", {
        params: { id: "run_missing" },
        headers: { accept: "text/event-stream" },
      });
      expect(unknown.status).toBe(404);
      for (const id of ["/runs/{id}", "/runs/{id}/steps", "/runs/{id}/approvals", "/runs/{id}/webhooks"]) {
        expect((await call(server, "GET", id, { params: { id: "run_missing" } })).status).toBe(404);
      }
      expect((await call(server, "POST", "/runs/{id}/stream-token", { params: { id: "run_missing" } })).status).toBe(
        404,
      );
      expect((await call(server, "DELETE", "/runs/{id}", { params: { id: "run_missing" } })).status).toBe(404);
      const approve = await call(server, "POST", "/runs/{id}/approvals/{toolCallId}", {
        params: { id: "run_missing", toolCallId: "call_1" },
        body: { decision: "approve" },
      });
      expect(approve.body.error.details).toEqual({ run: "run_missing" });

      server.upstream.enqueue({ text: "done" });
      const session = await createSession();
      const run = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        query: "wait=true",
        body: { input: "x" },
      });
      const params = { id: run.body.run.id as string };
      const badHeader = await call(server, "GET", "/runs/{id}/events", {
        params,
        headers: { accept: "text/event-stream", "last-event-id": "abc" },
      });
      expect(badHeader.status).toBe(400);
      expect(badHeader.body.error.code).toBe("INVALID_LAST_EVENT_ID");
      const badAfter = await call(server, "GET", "/runs/{id}/events", { params, query: "after=-1" });
      expect(badAfter.body.error.code).toBe("VALIDATION_FAILED");
      // Past any seq a run can hold (PostgreSQL stores seqs as INTEGER), within the header's
      // pattern: past the end of this finished run. Longer than the pattern: refused.
      const pastHeader = await call(server, "GET", "/runs/{id}/events", {
        params,
        headers: { accept: "text/event-stream", "last-event-id": "2147483648" },
      });
      expect(pastHeader.status).toBe(204);
      const longHeader = await call(server, "GET", "/runs/{id}/events", {
        params,
        headers: { accept: "text/event-stream", "last-event-id": "1".repeat(16) },
      });
      expect(longHeader.body.error.code).toBe("INVALID_LAST_EVENT_ID");
      const pastAfter = await call(server, "GET", "/runs/{id}/events", { params, query: "after=2147483648" });
      expect(pastAfter.body.error.code).toBe("VALIDATION_FAILED");
      // The route negotiates nothing: whatever the Accept header, the answer is the stream.
      const anyAccept = await validatedStream(
        "GET",
        "/runs/{id}/events",
        await stream(server, "GET", "/runs/{id}/events", { params, headers: { accept: "application/json" } }),
      );
      expect(anyAccept.at(-1)?.event).toBe("run.finished");
    });

    it("chat (AI SDK protocol): a message streams as UI chunks; resume is 204 idle, a replay while a run is live; 409 busy", async () => {
      const message = (text: string) => ({
        id: "chat_1",
        trigger: "submit-message",
        messages: [{ id: "m1", role: "user", parts: [{ type: "text", text }] }],
      });
      server.upstream.enqueue({ text: ["hi ", "there"] });
      const session = await createSession();
      const params = { id: session };
      const chat = await validatedStream(
        "POST",
        "/sessions/{id}/chat",
        await stream(server, "POST", "/sessions/{id}/chat", { params, body: message("hello") }),
      );
      // Text pieces may arrive as one delta or several (as they reach the server): runs of them fold.
      const types = chat.map((e) => (e.data === "[DONE]" ? e.data : e.json.type));
      expect(types.filter((t, i) => !(t === "text-delta" && types[i - 1] === "text-delta"))).toEqual([
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
        "[DONE]",
      ]);
      const byId = { id: session, chatId: "chat_1" };
      expect((await call(server, "GET", "/sessions/{id}/chat/stream", { params })).status).toBe(204);
      expect((await call(server, "GET", "/sessions/{id}/chat/{chatId}/stream", { params: byId })).status).toBe(204);
      const noText = await call(server, "POST", "/sessions/{id}/chat", {
        params,
        body: { messages: [{ role: "user", parts: [{ type: "file" }] }] },
      });
      expect(noText.body.error.code).toBe("EMPTY_MESSAGE");

      const hold = gate();
      server.upstream.enqueue({ text: ["slow ", "reply"], gate: hold.wait });
      const live = await stream(server, "POST", "/sessions/{id}/chat", { params, body: message("again") });
      await live.waitFor((e) => e.json?.type === "text-delta");
      const resumed = await stream(server, "GET", "/sessions/{id}/chat/stream", { params });
      const resumedById = await stream(server, "GET", "/sessions/{id}/chat/{chatId}/stream", { params: byId });
      const busy = await call(server, "POST", "/sessions/{id}/chat", { params, body: message("third") });
      expect(busy.status).toBe(409);
      expect(busy.body.error.code).toBe("SESSION_BUSY");
      hold.open();
      const [a, b, c] = [
        await validatedStream("POST", "/sessions/{id}/chat", live),
        await validatedStream("GET", "/sessions/{id}/chat/stream", resumed),
        await validatedStream("GET", "/sessions/{id}/chat/{chatId}/stream", resumedById),
      ];
      expect(b.map((e) => e.data)).toEqual(a.map((e) => e.data));
      expect(c.map((e) => e.data)).toEqual(a.map((e) => e.data));

      for (const [method, path] of [
        ["GET", "/sessions/{id}/chat/stream"],
        ["GET", "/sessions/{id}/chat/{chatId}/stream"],
        ["POST", "/sessions/{id}/chat"],
      ] as const) {
        const missing = await call(server, method, path, {
          params: { id: "ses_missing", chatId: "c" },
          ...(method === "POST" ? { body: message("x") } : {}),
        });
        expect(missing.status, path).toBe(404);
      }
    });

    it("DELETE a session with an active run aborts the run, then deletes both (204)", async () => {
      server.upstream.enqueue({
        toolCalls: [{ id: "call_e", name: "edit_file", arguments: '{"path":"a","oldText":"a","newText":"b"}' }],
      });
      const session = await createSession();
      const run = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "edit" },
      });
      const sse = await stream(server, "GET", "/runs/{id}/events", { params: { id: run.body.id } });
      await sse.waitFor((e) => e.event === "approval.requested");
      const deleted = await call(server, "DELETE", "/sessions/{id}", { params: { id: session } });
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBeNull();
      const events = await validatedStream("GET", "/runs/{id}/events", sse);
      expect(events.at(-1)?.json.run.stopReason).toBe("aborted");
      expect((await call(server, "GET", "/sessions/{id}", { params: { id: session } })).status).toBe(404);
      expect((await call(server, "GET", "/runs/{id}", { params: { id: run.body.id } })).status).toBe(404);
    });

    it("GET /tools lists every tool with its JSON Schema, default approval and the shell's sandbox", async () => {
      const tools = await call(server, "GET", "/tools");
      expect(tools.status).toBe(200);
      expect(tools.body.nextCursor).toBeNull();
      const byName = Object.fromEntries(tools.body.items.map((t: { name: string }) => [t.name, t]));
      // The read-only shell is offered only where the sandbox enforces it (bwrap works here, as in CI).
      const sandbox = server.ctx.shellSandbox.kind;
      expect(Object.keys(byName).sort()).toEqual([
        "edit_file",
        "list_files",
        "read_file",
        "search_files",
        "shell",
        ...(sandbox === "bwrap" ? ["shell_readonly"] : []),
        "write_file",
      ]);
      expect(byName.shell.sandbox).toBe(sandbox);
      if (sandbox === "bwrap") {
        expect(byName.shell_readonly).toMatchObject({ readOnly: true, defaultApproval: "allow", sandbox: "bwrap" });
      }
      expect(byName.read_file).toMatchObject({
        readOnly: true,
        defaultApproval: "allow",
        inputSchema: { type: "object" },
      });
      expect(byName.shell).toMatchObject({ readOnly: false, defaultApproval: "ask" });
    });

    it("console: / serves the page (open, no CDN: its assets are the server's own; nosniff, no referrer); an unknown asset is 404", async () => {
      const page = await call(server, "GET", "/");
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
      expect(page.headers.get("x-content-type-options")).toBe("nosniff");
      expect(page.headers.get("referrer-policy")).toBe("no-referrer");
      // Every URL but the empty icon (`data:,`, so the browser asks for no /favicon.ico).
      const assets = [...String(page.body).matchAll(/(?:src|href)="([^"]+)"/g)]
        .map((m) => m[1] as string)
        .filter((url) => url !== "data:,");
      expect(assets.length).toBeGreaterThanOrEqual(2);
      for (const asset of assets) {
        expect(asset).toMatch(/^\/console\/assets\//);
        const file = asset.replace("/console/assets/", "");
        expect((await call(server, "GET", "/console/assets/{file}", { params: { file } })).status).toBe(200);
      }
      expect((await call(server, "GET", "/console/assets/{file}", { params: { file: "nope.js" } })).status).toBe(404);
    });

    it("health: /healthz 200, /readyz 200, /openapi.yaml serves this spec, /metrics the metrics", async () => {
      expect((await call(server, "GET", "/healthz")).body).toEqual({ status: "ok" });
      const ready = await call(server, "GET", "/readyz");
      expect(ready.body).toEqual({
        ready: true,
        checks: { accepting: { ok: true }, database: { ok: true }, workspaces: { ok: true }, model: { ok: true } },
        shell:
          server.ctx.shellSandbox.kind === "bwrap"
            ? { sandbox: "bwrap", network: false }
            : { sandbox: "none", network: true, reason: expect.any(String) },
      });
      const yaml = await call(server, "GET", "/openapi.yaml");
      expect(yaml.status).toBe(200);
      expect(yaml.contentType).toMatch(/^application\/yaml/);
      expect(yaml.body).toBe(readFileSync(specPath, "utf8"));
      const metrics = await call(server, "GET", "/metrics");
      expect(metrics.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(metrics.body).toMatch(/^# TYPE agent_runs_started_total counter$/m);
    });

    it("503 STORAGE_UNAVAILABLE on writes while the database refuses them; /readyz says why", async () => {
      server.upstream.enqueue(
        { toolCalls: [{ id: "call_q", name: "write_file", arguments: '{"path":"q.txt","content":"q"}' }] },
        { text: "ok" },
      );
      const busySession = await createSession();
      const idleSession = await createSession();
      const run = await call(server, "POST", "/sessions/{id}/runs", {
        params: { id: busySession },
        body: { input: "q" },
      });
      const sse = await stream(server, "GET", "/runs/{id}/events", { params: { id: run.body.id } });
      await sse.waitFor((e) => e.event === "approval.requested");

      faulty.failWrites("readonly");
      try {
        const writes = [
          await call(server, "POST", "/sessions"),
          await call(server, "POST", "/sessions/{id}/runs", { params: { id: idleSession }, body: { input: "x" } }),
          await call(server, "DELETE", "/sessions/{id}", { params: { id: idleSession } }),
          await call(server, "POST", "/runs/{id}/approvals/{toolCallId}", {
            params: { id: run.body.id, toolCallId: "call_q" },
            body: { decision: "approve" },
          }),
        ];
        for (const res of writes) {
          expect(res.status).toBe(503);
          expect(res.body.error.code).toBe("STORAGE_UNAVAILABLE");
        }
        const ready = await call(server, "GET", "/readyz");
        expect(ready.status).toBe(503);
        expect(ready.body).toMatchObject({
          ready: false,
          checks: { database: { ok: false, message: expect.any(String) } },
        });
      } finally {
        faulty.heal();
      }
      // Nothing was half-done: the session still exists, the approval can still be given.
      expect((await call(server, "GET", "/sessions/{id}", { params: { id: idleSession } })).status).toBe(200);
      const approved = await call(server, "POST", "/runs/{id}/approvals/{toolCallId}", {
        params: { id: run.body.id, toolCallId: "call_q" },
        body: { decision: "approve" },
      });
      expect(approved.status).toBe(200);
      expect((await validatedStream("GET", "/runs/{id}/events", sse)).at(-1)?.json.run.stopReason).toBe("complete");
    });
  },
);

describe("contract: hosts a server without keys answers (DNS rebinding)", () => {
  let keyless: TestServer;
  beforeAll(async () => {
    keyless = await startTestServer();
  });
  afterAll(async () => {
    await keyless.close();
  });

  it("every route answers 403 HOST_NOT_ALLOWED to a request naming a foreign host, and serves its own", async () => {
    const port = new URL(keyless.url).port;
    for (const op of documentedOperations()) {
      const res = await call(keyless, op.method, op.path, {
        params: { ...DUMMY, file: "index.js" },
        headers: { host: `rebind.attacker.example:${port}` },
      });
      expect(res.status, `${op.method} ${op.path}`).toBe(403);
      expect(res.body.error.code).toBe("HOST_NOT_ALLOWED");
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      expect((await call(keyless, "GET", "/healthz", { headers: { host } })).status, host).toBe(200);
    }
  });
});

describe("contract: connections over MAX_CONNECTIONS", () => {
  let full: TestServer;
  let held: Socket;
  beforeAll(async () => {
    // One connection is all it holds; the test's silent client takes it (and is not cut meanwhile).
    full = await startTestServer({
      env: { MAX_CONNECTIONS: "1", HEADERS_TIMEOUT_MS: "60000", REQUEST_TIMEOUT_MS: "60000" },
    });
    held = connect(Number(new URL(full.url).port), "127.0.0.1");
    held.on("error", () => {});
    await new Promise<number>((resolve) => {
      const poll = () => full.app.server.getConnections((_err, n) => (n === 1 ? resolve(n) : setTimeout(poll, 10)));
      poll();
    });
  });
  afterAll(async () => {
    held.destroy();
    await full.close();
  });

  it("every route but /healthz answers 503 TOO_MANY_CONNECTIONS with Retry-After; /healthz answers 200", async () => {
    for (const op of documentedOperations()) {
      const res = await call(full, op.method, op.path, { params: { ...DUMMY, file: "index.js" } });
      if (op.path === "/healthz") {
        expect(res.status).toBe(200);
        continue;
      }
      expect(res.status, `${op.method} ${op.path}`).toBe(503);
      expect(res.body.error.code).toBe("TOO_MANY_CONNECTIONS");
      expect(res.headers.get("retry-after")).toBe("5");
      expect(res.headers.get("connection")).toBe("close");
    }
  });
});

describe("contract: authentication (AGENT_API_KEYS)", () => {
  let auth: TestServer;
  beforeAll(async () => {
    auth = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}` } });
  });
  afterAll(async () => {
    await auth.close();
  });

  it("every protected route answers 401 with WWW-Authenticate without a valid key", async () => {
    const protectedOps = documentedOperations().filter((o) => !o.open);
    expect(protectedOps.length).toBeGreaterThan(10);
    for (const op of protectedOps) {
      for (const headers of [{}, bearer("not-a-valid-key-at-all")]) {
        const res = await call(auth, op.method, op.path, { params: DUMMY, headers });
        expect(res.status, `${op.method} ${op.path}`).toBe(401);
        expect(res.headers.get("www-authenticate")).toBe('Bearer realm="agent-server"');
        expect(res.body.error.code).toBe("UNAUTHORIZED");
      }
    }
  });

  it("health routes are open; a key sees only its own sessions", async () => {
    expect((await call(auth, "GET", "/healthz")).status).toBe(200);
    expect((await call(auth, "GET", "/readyz")).status).toBe(200);
    const mine = await call(auth, "POST", "/sessions", { headers: bearer(KEY_A) });
    expect(mine.status).toBe(201);
    const listA = await call(auth, "GET", "/sessions", { headers: bearer(KEY_A) });
    expect(listA.body.items.map((s: { id: string }) => s.id)).toEqual([mine.body.id]);
    const listB = await call(auth, "GET", "/sessions", { headers: bearer(KEY_B) });
    expect(listB.body).toEqual({ items: [], nextCursor: null });
    const other = await call(auth, "GET", "/sessions/{id}", { params: { id: mine.body.id }, headers: bearer(KEY_B) });
    expect(other.status).toBe(404);
    expect((await call(auth, "GET", "/openapi.yaml", { headers: bearer(KEY_A) })).status).toBe(200);
  });

  it("GET /webhook-secret: each key its own secret, never cached; 409 without WEBHOOK_SECRET or without keys", async () => {
    const unavailable = await call(auth, "GET", "/webhook-secret", { headers: bearer(KEY_A) });
    expect(unavailable.status).toBe(409);
    expect(unavailable.body.error.code).toBe("WEBHOOK_SECRET_UNAVAILABLE");
    const secret = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
    const signing = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, WEBHOOK_SECRET: secret } });
    const keyless = await startTestServer({ env: { WEBHOOK_SECRET: secret } });
    try {
      const a = await call(signing, "GET", "/webhook-secret", { headers: bearer(KEY_A) });
      const b = await call(signing, "GET", "/webhook-secret", { headers: bearer(KEY_B) });
      expect(a.status).toBe(200);
      expect(a.headers.get("cache-control")).toBe("no-store");
      expect(new Set([a.body.secret, b.body.secret, secret]).size).toBe(3);
      expect((await call(signing, "GET", "/webhook-secret", { headers: bearer(KEY_A) })).body).toEqual(a.body);
      const none = await call(keyless, "GET", "/webhook-secret");
      expect(none.status).toBe(409);
      expect(none.body.error.message).toMatch(/no API keys/);
    } finally {
      await signing.close();
      await keyless.close();
    }
  });

  it("MAX_RUNS_PER_KEY: a key at its limit gets 429 TOO_MANY_RUNS (scope key); another key still starts runs", async () => {
    const limited = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, MAX_RUNS_PER_KEY: "1" } });
    try {
      const hold = gate();
      limited.upstream.enqueue({ text: "slow", gate: hold.wait });
      const session = async (key: string) => (await call(limited, "POST", "/sessions", { headers: bearer(key) })).body;
      const [a1, a2, b1] = [await session(KEY_A), await session(KEY_A), await session(KEY_B)];
      const start = (id: string, key: string) =>
        call(limited, "POST", "/sessions/{id}/runs", { params: { id }, body: { input: "go" }, headers: bearer(key) });
      const first = await start(a1.id, KEY_A);
      expect(first.status).toBe(201);
      const refused = await start(a2.id, KEY_A);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.body.error).toMatchObject({ code: "TOO_MANY_RUNS", details: { limit: 1, scope: "key" } });
      limited.upstream.enqueue({ text: "b is fine" });
      const other = await start(b1.id, KEY_B);
      expect(other.status).toBe(201);
      hold.open();
      await limited.ctx.manager.waitForFinish(first.body.id);
      await limited.ctx.manager.waitForFinish(other.body.id);
      // The slot is free again once the key's run has finished.
      limited.upstream.enqueue({ text: "now" });
      const again = await start(a2.id, KEY_A);
      expect(again.status).toBe(201);
      await limited.ctx.manager.waitForFinish(again.body.id);
    } finally {
      await limited.close();
    }
  });

  it("MAX_SESSIONS_PER_KEY: 429 TOO_MANY_SESSIONS; APPROVAL_POLICY_MAX and a deep body: 400s as documented", async () => {
    const limited = await startTestServer({
      env: { AGENT_API_KEYS: KEY_A, MAX_SESSIONS_PER_KEY: "1", APPROVAL_POLICY_MAX: "shell=ask" },
    });
    try {
      const as = bearer(KEY_A);
      const loose = await call(limited, "POST", "/sessions", {
        body: { approval: { tools: { shell: "allow" } } },
        headers: as,
      });
      expect(loose.status).toBe(400);
      expect(loose.body.error.code).toBe("APPROVAL_POLICY_TOO_LOOSE");
      const deep = await call(limited, "POST", "/sessions", {
        rawBody: `{"metadata":{"a":${"[".repeat(100)}${"]".repeat(100)}}}`,
        contentType: "application/json",
        headers: as,
      });
      expect(deep.status).toBe(400);
      expect(deep.body.error.code).toBe("INVALID_BODY");
      const first = await call(limited, "POST", "/sessions", { headers: as });
      expect(first.status).toBe(201);
      const run = await call(limited, "POST", "/sessions/{id}/runs", {
        params: { id: first.body.id },
        body: { input: "x", approval: { default: "allow" } },
        headers: as,
      });
      expect(run.status).toBe(400);
      expect(run.body.error).toMatchObject({ code: "APPROVAL_POLICY_TOO_LOOSE", details: { tools: { shell: "ask" } } });
      const second = await call(limited, "POST", "/sessions", { headers: as });
      expect(second.status).toBe(429);
      expect(second.body.error).toMatchObject({ code: "TOO_MANY_SESSIONS", details: { limit: 1, scope: "key" } });
    } finally {
      await limited.close();
    }
  });

  it("MAX_STREAMS_PER_KEY: a key holding its streams gets 429 TOO_MANY_STREAMS with Retry-After on every streaming route", async () => {
    const limited = await startTestServer({ env: { AGENT_API_KEYS: `${KEY_A},${KEY_B}`, MAX_STREAMS_PER_KEY: "1" } });
    try {
      const as = bearer(KEY_A);
      const hold = gate();
      limited.upstream.enqueue({ text: "slow", gate: hold.wait });
      const session = (await call(limited, "POST", "/sessions", { headers: as })).body.id as string;
      const idle = (await call(limited, "POST", "/sessions", { headers: as })).body.id as string;
      const run = await call(limited, "POST", "/sessions/{id}/runs", {
        params: { id: session },
        body: { input: "go" },
        headers: as,
      });
      const held = await stream(limited, "GET", "/runs/{id}/events", { params: { id: run.body.id }, headers: as });
      expect(held.status).toBe(200);
      const chat = { messages: [{ role: "user", parts: [{ type: "text", text: "hi" }] }] };
      const refusals = [
        await call(limited, "GET", "/runs/{id}/events", { params: { id: run.body.id }, headers: as }),
        await call(limited, "GET", "/sessions/{id}/chat/stream", { params: { id: session }, headers: as }),
        await call(limited, "GET", "/sessions/{id}/chat/{chatId}/stream", {
          params: { id: session, chatId: "chat_1" },
          headers: as,
        }),
        await call(limited, "POST", "/sessions/{id}/runs", {
          params: { id: idle },
          query: "wait=true",
          body: { input: "x" },
          headers: as,
        }),
        await call(limited, "POST", "/sessions/{id}/runs", {
          params: { id: idle },
          body: { input: "x" },
          headers: { ...as, accept: "text/event-stream" },
        }),
        await call(limited, "POST", "/sessions/{id}/chat", { params: { id: idle }, body: chat, headers: as }),
      ];
      for (const refused of refusals) {
        expect(refused.status).toBe(429);
        expect(refused.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
        expect(refused.body.error).toMatchObject({ code: "TOO_MANY_STREAMS", details: { limit: 1, scope: "key" } });
      }
      expect(
        (await call(limited, "GET", "/sessions/{id}/runs", { params: { id: idle }, headers: as })).body.items,
      ).toEqual([]);
      hold.open();
      expect((await validatedStream("GET", "/runs/{id}/events", held)).at(-1)?.event).toBe("run.finished");
    } finally {
      await limited.close();
    }
  });

  it("an unexpected failure on any protected route is 500 INTERNAL with a request id", async () => {
    const spy = vi.spyOn(auth.ctx.apiKeys, "authenticate").mockImplementation(() => {
      throw new Error("injected failure");
    });
    try {
      for (const op of documentedOperations().filter((o) => !o.open)) {
        const res = await call(auth, op.method, op.path, { params: DUMMY, headers: bearer(KEY_A) });
        expect(res.status, `${op.method} ${op.path}`).toBe(500);
        expect(res.body.error).toEqual({
          code: "INTERNAL",
          message: "internal server error",
          details: { requestId: expect.stringMatching(/^req_/) },
        });
      }
    } finally {
      spy.mockRestore();
    }
  });
});

describe("contract: limits and readiness", () => {
  it("DELETE of a session with a run no process executes (left unfinished in the file) is 409 SESSION_BUSY", async () => {
    const alone = await startTestServer();
    try {
      const session = (await call(alone, "POST", "/sessions")).body.id as string;
      const runId = "run_left_unfinished";
      await alone.ctx.store.runs.create(runRecord({ id: runId, sessionId: session }), [
        { type: "run.started", runId, seq: 1, at: new Date().toISOString() },
      ]);
      const refused = await call(alone, "DELETE", "/sessions/{id}", { params: { id: session } });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ code: "SESSION_BUSY", details: { runId } });
      expect((await call(alone, "GET", "/sessions/{id}", { params: { id: session } })).status).toBe(200);
    } finally {
      await alone.close();
    }
  });

  it("429 TOO_MANY_RUNS with Retry-After at MAX_CONCURRENT_RUNS, 503 SHUTTING_DOWN when stopping", async () => {
    const limited = await startTestServer({ env: { MAX_CONCURRENT_RUNS: "1" } });
    try {
      const hold = gate();
      limited.upstream.enqueue({ text: "slow", gate: hold.wait });
      const a = await call(limited, "POST", "/sessions");
      const b = await call(limited, "POST", "/sessions");
      const first = await call(limited, "POST", "/sessions/{id}/runs", {
        params: { id: a.body.id },
        body: { input: "1" },
      });
      expect(first.status).toBe(201);
      const refused = await call(limited, "POST", "/sessions/{id}/runs", {
        params: { id: b.body.id },
        body: { input: "2" },
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.body.error).toMatchObject({ code: "TOO_MANY_RUNS", details: { limit: 1, scope: "server" } });
      const chatBody = { messages: [{ role: "user", parts: [{ type: "text", text: "2" }] }] };
      const refusedChat = await call(limited, "POST", "/sessions/{id}/chat", {
        params: { id: b.body.id },
        body: chatBody,
      });
      expect(refusedChat.status).toBe(429);
      hold.open();
      await limited.ctx.manager.waitForFinish(first.body.id);

      await limited.ctx.manager.shutdown({ graceMs: 0 });
      const stoppingChat = await call(limited, "POST", "/sessions/{id}/chat", {
        params: { id: b.body.id },
        body: chatBody,
      });
      expect(stoppingChat.status).toBe(503);
      const stopping = await call(limited, "POST", "/sessions/{id}/runs", {
        params: { id: b.body.id },
        body: { input: "3" },
      });
      expect(stopping.status).toBe(503);
      expect(stopping.body.error.code).toBe("SHUTTING_DOWN");
    } finally {
      await limited.close();
    }
  });

  it("GET /metrics with METRICS_PORT set is 404 NOT_FOUND on the API port", async () => {
    const apart = await startTestServer({ env: { METRICS_PORT: String(await freePort()) } });
    try {
      const here = await call(apart, "GET", "/metrics");
      expect(here.status).toBe(404);
      expect(here.body.error.code).toBe("NOT_FOUND");
    } finally {
      await apart.close();
    }
  });

  it("/readyz is 503 naming the variable when no model is configured; runs fail with an actionable error", async () => {
    const unconfigured = await startTestServer({ env: { OPENAI_MODEL: "" } });
    try {
      const ready = await call(unconfigured, "GET", "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({
        ready: false,
        checks: {
          accepting: { ok: true },
          database: { ok: true },
          workspaces: { ok: true },
          model: { ok: false, message: expect.stringContaining("OPENAI_MODEL") },
        },
        shell: expect.objectContaining({ sandbox: unconfigured.ctx.shellSandbox.kind }),
      });
      const session = await call(unconfigured, "POST", "/sessions");
      const run = await call(unconfigured, "POST", "/sessions/{id}/runs", {
        params: { id: session.body.id },
        query: "wait=true",
        body: { input: "x" },
      });
      expect(run.body.run.error).toEqual({
        code: "MODEL_NOT_CONFIGURED",
        message: expect.stringContaining("OPENAI_MODEL"),
      });
    } finally {
      await unconfigured.close();
    }
  });
});

// Runs last (tests in a file run in order): it reads what the tests above validated, so it
// is meaningful only when the whole file runs, not under a `-t` filter.
describe("contract: coverage", () => {
  it("every documented operation and status was produced and validated", () => {
    const documented = documentedOperations().flatMap((op) => op.statuses.map((s) => `${op.method} ${op.path} ${s}`));
    const missing = documented.filter((key) => !validatedResponses().has(key));
    expect(missing, "documented responses no test produced").toEqual([]);
    // And every documented path has at least one validated response.
    for (const op of documentedOperations()) {
      expect([...validatedResponses()].some((key) => key.startsWith(`${op.method} ${op.path} `))).toBe(true);
    }
  });

  it("every documented event type was received and validated", () => {
    expect([...validatedEventTypes()].sort()).toEqual(documentedEventTypes().sort());
  });
});
