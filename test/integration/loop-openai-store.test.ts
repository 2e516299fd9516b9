import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { z } from "zod";
import { approveAll } from "../../src/agent/approval.js";
import type { AgentMessage } from "../../src/agent/messages.js";
import { runAgent } from "../../src/agent/run-agent.js";
import type { AgentTool } from "../../src/agent/tool.js";
import { toAgentMessage } from "../../src/domain/stored-message.js";
import { createOpenAIModelClient } from "../../src/model/index.js";
import { EventHub } from "../../src/runs/event-hub.js";
import { RunRecorder } from "../../src/runs/recorder.js";
import { openSqliteStore } from "../../src/store/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { type FakeUpstream, startFakeUpstream } from "../fakes/openai-upstream.js";
import { runRecord, seedSession } from "../helpers/seed.js";
import { tempDir } from "../helpers/temp-dir.js";

let dir: ReturnType<typeof tempDir>;
let dbPath: string;
let store: Store;
let upstream: FakeUpstream;

beforeEach(async () => {
  dir = tempDir();
  dbPath = join(dir.path, "agent.db");
  store = openSqliteStore({ path: dbPath });
  upstream = await startFakeUpstream();
});
afterEach(async () => {
  await upstream.close();
  await store.close();
  dir.cleanup();
});

const weather: AgentTool<{ city: string }> = {
  name: "weather",
  description: "The weather in a city",
  inputSchema: z.object({ city: z.string() }),
  readOnly: true,
  execute: async ({ city }) => ({ ok: true, output: `sunny in ${city}` }),
};

it("the loop, the real OpenAI client over HTTP and the real store: a two-tool-call run is committed and read back intact", async () => {
  await seedSession(store, { id: "ses_1", system: "be brief" });
  await store.runs.create(runRecord({ id: "run_1", sessionId: "ses_1", input: "weather?" }), []);
  upstream.enqueue(
    {
      text: "Checking both.",
      toolCalls: [
        { id: "call_p", name: "weather", arguments: ['{"ci', 'ty":"Paris"}'] },
        { id: "call_o", name: "weather", arguments: ['{"city"', ':"Oslo"}'] },
      ],
    },
    { text: ["Paris and Oslo ", "are sunny."] },
  );
  const recorder = await RunRecorder.open({ store, hub: new EventHub(), runId: "run_1", sessionId: "ses_1" });
  const result = await runAgent({
    model: createOpenAIModelClient({
      baseURL: upstream.baseURL,
      apiKey: "sk-test",
      model: "fake-model",
      maxRetries: 0,
    }),
    system: "be brief",
    tools: [weather],
    history: [],
    input: "weather?",
    beforeToolCall: approveAll,
    commit: async (item) => {
      if (item.type === "message") await recorder.commitMessage(item.message);
    },
    emit: (event) => recorder.buffer(event),
    signal: new AbortController().signal,
    maxTurns: 5,
  });
  recorder.dispose();
  expect(result.stopReason).toBe("complete");
  expect(result.stats).toMatchObject({ modelCalls: 2, toolCalls: 2, turns: 2, inputTokens: 20, outputTokens: 10 });

  await store.close();
  store = openSqliteStore({ path: dbPath });
  const history = (await store.messages.history("ses_1")).map(toAgentMessage);
  expect(history).toEqual(result.messages);
  expect(history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
  const assistant = history[1] as Extract<AgentMessage, { role: "assistant" }>;
  expect(assistant.content).toBe("Checking both.");
  expect(assistant.toolCalls).toEqual([
    { id: "call_p", name: "weather", input: '{"city":"Paris"}' },
    { id: "call_o", name: "weather", input: '{"city":"Oslo"}' },
  ]);
  expect(history.slice(2, 4).map((m) => [m.role === "tool" && m.toolCallId, m.content])).toEqual([
    ["call_p", "sunny in Paris"],
    ["call_o", "sunny in Oslo"],
  ]);
  expect(history[4]?.content).toBe("Paris and Oslo are sunny.");

  // What went back to the model: the system prompt, the assistant's calls, one tool message per call.
  const second = upstream.requests[1]?.body;
  expect(second.messages[0]).toEqual({ role: "system", content: "be brief" });
  expect(second.messages[2].tool_calls.map((c: { id: string }) => c.id)).toEqual(["call_p", "call_o"]);
  expect(second.messages.slice(3).map((m: { role: string; tool_call_id: string }) => [m.role, m.tool_call_id])).toEqual(
    [
      ["tool", "call_p"],
      ["tool", "call_o"],
    ],
  );
  expect(second.tools[0].function.parameters.properties.city.type).toBe("string");
  upstream.assertComplete();
});
