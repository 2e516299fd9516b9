import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/messages.js";
import type { ModelRequest, ToolSpec } from "../../src/agent/model.js";
import { PROVIDER_PROFILES, profileNamed } from "../../src/model/provider-profile.js";
import { encodeChatRequest, extraChars } from "../../src/model/wire-body.js";
import { toChatMessage, toChatRequest } from "../../src/model/wire-request.js";

const history: AgentMessage[] = [
  { id: "m1", role: "user", content: 'quotes " and \\ backslashes, new\nlines, tabs\t, control \u0001, émoji 🙂' },
  {
    id: "m2",
    role: "assistant",
    content: "",
    toolCalls: [
      { id: "c1", name: "read_file", input: '{"path":"a.txt"}' },
      { id: "c2", name: "list_files", input: "{}" },
    ],
    metadata: {
      reasoning: "thinking…",
      reasoningDetails: [
        { type: "reasoning.text", text: "thinking…", format: "google-gemini-v1", index: 0 },
        { type: "reasoning.encrypted", data: "c2lnbmVk", id: "c1", index: 0 },
      ],
      toolCallFields: { c1: { extra_content: { google: { thought_signature: "sig" } } } },
    },
  },
  {
    id: "m3",
    role: "tool",
    toolCallId: "c1",
    content: "contents\u2028of a.txt",
    isError: false,
    metadata: { errorCode: null, retryable: false, durationMs: 1, outputChars: 17, truncated: false },
  },
  {
    id: "m4",
    role: "tool",
    toolCallId: "c2",
    content: "denied",
    isError: true,
    metadata: { errorCode: "DENIED", retryable: false, durationMs: 0, outputChars: 6, truncated: false },
  },
  {
    id: "m5",
    role: "assistant",
    content: "Done.",
    metadata: {
      refusal: true,
      reasoning: "wrap up",
      reasoningDetails: [{ type: "reasoning.summary", summary: "wrap up", index: 0 }],
    },
  },
];
const tools: ToolSpec[] = [
  {
    name: "read_file",
    description: "Reads a file.",
    parameters: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties: {} },
  },
];
const request = (over: Partial<ModelRequest>): ModelRequest => ({
  messages: history,
  tools,
  signal: new AbortController().signal,
  ...over,
});
const sent = (r: ModelRequest, profile = profileNamed("openai")) => encodeChatRequest(r, "m-odel", profile);

describe("reasoning blocks sent back", () => {
  it("under openrouter every assistant message carries its stored blocks, one with calls or text alone; no other profile sends any", () => {
    const assistants = (name: (typeof PROVIDER_PROFILES)[number]) =>
      JSON.parse(sent(request({}), profileNamed(name)).toString("utf8")).messages.filter(
        (m: { role: string }) => m.role === "assistant",
      );
    const [withCalls, textOnly] = assistants("openrouter");
    expect(withCalls.reasoning_details).toEqual(
      history[1]?.role === "assistant" && history[1].metadata?.reasoningDetails,
    );
    expect(withCalls.tool_calls).toHaveLength(2);
    expect(textOnly).toEqual({
      role: "assistant",
      content: "Done.",
      reasoning_details: [{ type: "reasoning.summary", summary: "wrap up", index: 0 }],
    });
    for (const name of PROVIDER_PROFILES.filter((n) => n !== "openrouter")) {
      for (const message of assistants(name)) expect(message, name).not.toHaveProperty("reasoning_details");
    }
  });
});

describe("the request body as sent: each message encoded once", () => {
  it.each(PROVIDER_PROFILES)("is byte for byte the JSON of the request (profile %s)", (name) => {
    const profile = profileNamed(name);
    for (const r of [
      request({ system: "You are terse." }),
      request({ tools: [] }),
      request({ messages: history.slice(0, 1), system: "" }),
    ]) {
      const bytes = sent(r, profile);
      expect(bytes.equals(Buffer.from(JSON.stringify(toChatRequest(r, "m-odel", profile)), "utf8"))).toBe(true);
    }
  });

  it("a later request reuses the bytes of the messages an earlier one encoded; another profile encodes its own form", () => {
    const own: AgentMessage[] = history.map((m) => ({ ...m }));
    const first = sent(request({ messages: own.slice(0, 3) }));
    // Changed after being sent (which the loop never does): a reused encoding still sends the first form.
    (own[0] as { content: string }).content = "changed";
    const later = JSON.parse(sent(request({ messages: own })).toString("utf8"));
    expect(later.messages[0].content).toBe(history[0]?.content);
    expect(later.messages).toHaveLength(5);
    expect(JSON.parse(first.toString("utf8")).messages).toEqual(later.messages.slice(0, 3));
    // The Gemini form of the same assistant message carries its provider fields, the OpenAI form does not.
    const gemini = JSON.parse(sent(request({ messages: own }), profileNamed("gemini")).toString("utf8"));
    expect(gemini.messages[1].tool_calls[0].extra_content).toEqual({ google: { thought_signature: "sig" } });
    expect(later.messages[1].tool_calls[0]).not.toHaveProperty("extra_content");
  });

  it("the tools' part follows the list of tools: more, fewer or other tools after the same first one", () => {
    const list: ToolSpec = {
      name: "list_files",
      description: "Lists files.",
      parameters: { type: "object", properties: { depth: { type: "integer" } } },
    };
    const [read] = tools;
    if (!read) throw new Error("no tool");
    for (const list_ of [[read, list], [read], [read, list], [list, read], [read, { ...list, name: "other" }]]) {
      const r = request({ tools: list_ });
      expect(JSON.parse(sent(r).toString("utf8")).tools).toEqual(toChatRequest(r, "m-odel").tools);
    }
  });

  it("the body has memory of its own, not a slice of the shared pool that its request would keep alive whole", () => {
    const body = sent(request({ system: "You are terse." }));
    expect(body.length).toBeLessThan(Buffer.poolSize / 2); // small enough to be pooled by Buffer.concat
    expect(body.byteOffset).toBe(0);
    expect(body.buffer.byteLength).toBe(body.length);
  });
});

describe("what a message sends beyond its content and arguments (counted against contextMaxChars)", () => {
  const json = (value: unknown) => JSON.stringify(value).length;
  const metadata = (i: number) => {
    const m = history[i];
    return m?.role === "assistant" ? (m.metadata ?? {}) : {};
  };

  it("counts each field the profile sends back, and nothing under a profile that sends none", () => {
    const per = (name: (typeof PROVIDER_PROFILES)[number]) => history.map((m) => extraChars(m, profileNamed(name)));
    expect(per("openai")).toEqual([0, 0, 0, 0, 0]);
    expect(per("deepseek")).toEqual([0, 0, 0, 0, 0]);
    // reasoning_content goes back on every assistant message, the answer after the tool results
    // included: counted as text, like content.
    expect(per("deepseek-thinking")).toEqual([0, "thinking…".length, 0, 0, "wrap up".length]);
    // extra_content beside each call: its JSON text.
    expect(per("gemini")).toEqual([0, json(metadata(1).toolCallFields?.c1?.extra_content), 0, 0, 0]);
    // reasoning_details on every assistant message that stored some: their JSON text.
    expect(per("openrouter")).toEqual([
      0,
      json(metadata(1).reasoningDetails),
      0,
      0,
      json(metadata(4).reasoningDetails),
    ]);
  });

  it("is nonzero exactly where the profile's request form of the message differs from the plain one", () => {
    const plain = profileNamed("openai");
    for (const name of PROVIDER_PROFILES) {
      for (const m of history) {
        const differs = json(toChatMessage(m, profileNamed(name))) !== json(toChatMessage(m, plain));
        expect(extraChars(m, profileNamed(name)) > 0, `${name} ${m.id}`).toBe(differs);
      }
    }
  });

  it("is worked out once per message and profile: a later count reads the figure kept on the message", () => {
    const m = structuredClone(history[4]) as AgentMessage;
    const first = extraChars(m, profileNamed("openrouter"));
    expect(first).toBe(json(metadata(4).reasoningDetails));
    // Messages are never changed once committed; changing one here shows the figure is not recomputed.
    if (m.role === "assistant")
      m.metadata?.reasoningDetails?.push({ type: "reasoning.encrypted", data: "x".repeat(500) });
    expect(extraChars(m, profileNamed("openrouter"))).toBe(first);
    // Another profile makes its own figure.
    expect(extraChars(m, profileNamed("openai"))).toBe(0);
  });
});
