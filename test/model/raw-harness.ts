import type http from "node:http";
import { type RawUpstream, startRawUpstream } from "../helpers/raw-upstream.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** What one upstream request is answered with: a status, headers and the body's writes, in order. */
export interface RawReply {
  status?: number;
  headers?: Record<string, string>;
  writes: Array<string | Buffer>;
}

/** An SSE body of chat.completion.chunk objects (each `data: {...}\n\n`), then `data: [DONE]` unless `done` false. */
export function sse(chunks: unknown[], { done = true }: { done?: boolean } = {}): string[] {
  const out = chunks.map(
    (c) =>
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m", ...(c as object) })}\n\n`,
  );
  if (done) out.push("data: [DONE]\n\n");
  return out;
}

export interface Harness {
  server: TestServer;
  upstream: RawUpstream;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are inspected freely.
  requests: any[];
  close(): Promise<void>;
  /** Runs one user message to its end (?wait=true) in a fresh session; returns the run, its text and the history. */
  run(input?: string, session?: Record<string, unknown>): Promise<RunOutcome>;
}

/** A finished run as the API returned it, with the session's history. */
export interface RunOutcome {
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected freely.
  run: any;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected freely.
  messages: any[];
  sessionId: string;
}

/** A real server whose model upstream answers request n with replies[n] (byte-exact), recording each request body. */
export async function harness(replies: RawReply[], env: Record<string, string> = {}): Promise<Harness> {
  // biome-ignore lint/suspicious/noExplicitAny: see Harness.
  const requests: any[] = [];
  const upstream = await startRawUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
    const parts: Buffer[] = [];
    req.on("data", (p: Buffer) => parts.push(p));
    req.on("end", async () => {
      requests.push(JSON.parse(Buffer.concat(parts).toString("utf8")));
      const reply = replies[requests.length - 1];
      if (!reply) {
        res.writeHead(500, { "content-type": "application/json", "x-should-retry": "false" });
        res.end(JSON.stringify({ error: { message: "no scripted reply" } }));
        return;
      }
      res.writeHead(reply.status ?? 200, reply.headers ?? { "content-type": "text/event-stream" });
      for (const w of reply.writes) {
        res.write(w);
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
  });
  const server = await startTestServer({ env: { OPENAI_BASE_URL: upstream.baseURL, MODEL_MAX_RETRIES: "0", ...env } });
  return {
    server,
    upstream,
    requests,
    async close() {
      await server.close();
      upstream.close();
    },
    async run(input = "go", session = {}) {
      const created = await server.request("POST", "/sessions", { body: session });
      if (created.status !== 201) throw new Error(`session: ${created.status} ${JSON.stringify(created.body)}`);
      const id = created.body.id as string;
      const started = await server.request("POST", `/sessions/${id}/runs?wait=true`, { body: { input } });
      if (started.status !== 200) throw new Error(`run: ${started.status} ${JSON.stringify(started.body)}`);
      const messages = await server.request("GET", `/sessions/${id}/messages`);
      return { run: started.body.run, text: started.body.text, messages: messages.body.items, sessionId: id };
    },
  };
}
