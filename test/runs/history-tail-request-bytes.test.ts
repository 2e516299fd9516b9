import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelRequest } from "../../src/agent/model.js";
import type { StoredMessage } from "../../src/domain/stored-message.js";
import { profileNamed } from "../../src/model/provider-profile.js";
import { encodeChatRequest } from "../../src/model/wire-body.js";
import { HistoryTail } from "../../src/runs/history-tail.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

/**
 * HistoryTail's bound is "about bytes of memory": a message counts as kept and as the request
 * bytes the model client encodes for it and keeps on the message (wire-body.ts). It counted
 * both as the text's length, but those bytes are UTF-8 JSON: a control character is 6 bytes
 * (\u0001), a CJK character 3, so a 1 MiB message of \u0001 held ~7 MiB counted as ~2 MiB (the
 * default bound kept ~3.5x what it said). Now a message counts at least its text and those bytes.
 */
describe("the history tail's bound counts the request bytes kept on its messages", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: Store;
  beforeEach(() => {
    dir = tempDir("history-tail-request-bytes-");
    store = openSqliteStore({ path: join(dir.path, "agent.db") });
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  async function sessionWith(id: string, content: string): Promise<void> {
    await seedSession(store, { id });
    await store.runs.create(runRecord({ id: `run_${id}`, sessionId: id }), []);
    const message: StoredMessage = {
      id: `msg_${id}`,
      role: "user",
      content,
      sessionId: id,
      runId: `run_${id}`,
      seq: 1,
      createdAt: new Date().toISOString(),
    };
    await store.commitRun(`run_${id}`, [{ kind: "message", message }], []);
  }

  /** What a one-message session of `text` keeps: the text (as V8 holds it) and its request bytes. */
  async function held({
    tail,
    id,
    text,
    bytesPerChar,
  }: {
    tail: HistoryTail;
    id: string;
    text: string;
    bytesPerChar: number;
  }) {
    await sessionWith(id, text);
    const { messages } = await tail.read(id);
    const request: ModelRequest = { messages: [...messages], tools: [], signal: new AbortController().signal };
    return bytesPerChar * text.length + encodeChatRequest(request, "m", profileNamed("openai")).length;
  }

  it("a session of CJK text is counted at least at what it keeps (a two-byte string, 3 bytes a character as request JSON)", async () => {
    const tail = new HistoryTail(store, 64 * 1024 * 1024);
    const kept = await held({ tail, id: "ses_cjk", text: "漢".repeat(256 * 1024), bytesPerChar: 2 });
    expect(tail.size.sessions).toBe(1);
    expect(tail.size.chars).toBeGreaterThanOrEqual(kept);
  });

  it("a session of control-character text is counted at least at the bytes it keeps (text + request bytes)", async () => {
    const bound = 64 * 1024 * 1024;
    const tail = new HistoryTail(store, bound);
    const text = "\u0001".repeat(1024 * 1024); // a one-byte string of 1 MiB: 6 MiB as request JSON
    await sessionWith("ses_a", text);
    const { messages } = await tail.read("ses_a");
    // A run of the session asks the model: the client encodes (and keeps, on the message) its bytes.
    const request: ModelRequest = { messages: [...messages], tools: [], signal: new AbortController().signal };
    const body = encodeChatRequest(request, "m", profileNamed("openai"));
    const held = text.length + body.length; // the text as kept, and its request bytes kept on the message
    expect(tail.size.sessions).toBe(1);
    // Counted ~2 MiB for ~7 MiB held: the 64 MiB default bound keeps ~3.5x that (CJK text: ~2.5x).
    expect(tail.size.chars).toBeGreaterThanOrEqual(held);
  });
});
