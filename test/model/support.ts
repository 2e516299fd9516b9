import { afterEach, beforeEach } from "vitest";
import type { AgentMessage } from "../../src/agent/messages.js";
import type { ModelClient, ModelRequest, ToolSpec } from "../../src/agent/model.js";
import { createOpenAIModelClient, type OpenAIModelClientOptions } from "../../src/model/openai-client.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";

export const TEST_API_KEY = "sk-test-secret-key-0123456789";

/** The real client pointed at the fake, with timeouts small enough for tests. */
export function clientFor(upstream: FakeUpstream, overrides: Partial<OpenAIModelClientOptions> = {}): ModelClient {
  return createOpenAIModelClient({
    baseURL: upstream.baseURL,
    apiKey: TEST_API_KEY,
    model: "test-model",
    maxRetries: 2,
    requestTimeoutMs: 2_000,
    idleTimeoutMs: 2_000,
    ...overrides,
  });
}

export const userMessage = (content: string): AgentMessage => ({ id: `u-${content}`, role: "user", content });

export const lookupTool: ToolSpec = {
  name: "lookup",
  description: "Look a key up",
  parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
};

/** A minimal request: one user message, no tools, a live signal. */
export function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [userMessage("hi")],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

/** A promise with its resolver, for `gate`. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** The failure message of a result, or a marker when it unexpectedly succeeded. */
export function messageOf(result: { ok: boolean; message?: string }): string {
  return result.ok ? "(ok)" : (result.message ?? "");
}

/** The current test's fake upstream (a live binding: set anew before each test). */
export let upstream: FakeUpstream;

/** Gives every test of the file a fresh fake upstream, checked for unused replies and closed after it. */
export function useFakeUpstream(): void {
  beforeEach(async () => {
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    upstream.assertComplete();
    await upstream.close();
  });
}
