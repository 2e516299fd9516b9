import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

type Usage = { prompt_tokens: number; completion_tokens: number };

/** The value of a metric line (`name{labels} value`) in the exposition text, or null. */
function metric(text: string, line: string): number | null {
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? null : Number(found.slice(line.length + 1));
}

describe("usage a model upstream reports that is not a count of tokens (a malicious or broken provider)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  /** A run of two model requests (a call of an unknown tool, then text), each reporting `usage`. */
  const runReporting = async (usage: Usage) => {
    server.upstream.enqueue(
      { toolCalls: [{ id: "c1", name: "nope", arguments: "{}" }], usage },
      { text: "done", usage },
    );
    const session = (await server.request("POST", "/sessions", { body: {} })).body as { id: string };
    const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
    return { sessionId: session.id, run: waited.body.run as { id: string; stopReason: string } };
  };
  const finishedRuns = async () =>
    metric(
      await (await fetch(`${server.url}/metrics`)).text(),
      'agent_runs_finished_total{status="finished",stop_reason="complete"}',
    ) ?? 0;

  it("too large to add up: the run, its session's runs and its events stay readable, the token counter finite", async () => {
    // Before, 1e308 tokens twice made the run's stats Infinity, stored as null: GET /runs/{id},
    // GET /sessions/{id}/runs and the run's events answered 500 for good, and the process's
    // agent_model_tokens_total read +Inf until a restart.
    const { sessionId, run } = await runReporting({ prompt_tokens: 1e308, completion_tokens: 1e308 });
    expect(run.stopReason).toBe("complete");
    const read = await server.request("GET", `/runs/${run.id}`);
    expect(read.status).toBe(200);
    expect(read.body.stats).toMatchObject({ inputTokens: 0, outputTokens: 0 });
    expect((await server.request("GET", `/sessions/${sessionId}/runs`)).status).toBe(200);
    expect((await server.request("GET", `/runs/${run.id}/events`)).status).toBe(200);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(metric(text, 'agent_model_tokens_total{type="input"}') ?? 0).toBeLessThan(Number.POSITIVE_INFINITY);
  });

  it("negative or fractional: not counted, and the run's end is still measured", async () => {
    // Before, -5 tokens were stored as reported (the API's stats are integers >= 0), and the
    // metrics' counter threw on them, which lost the rest of the commit's facts: the run's end
    // was never counted in agent_runs_finished_total.
    for (const usage of [
      { prompt_tokens: -5, completion_tokens: 1 },
      { prompt_tokens: 0.5, completion_tokens: 1 },
    ]) {
      const before = await finishedRuns();
      const { run } = await runReporting(usage);
      expect(run.stopReason).toBe("complete");
      const read = await server.request("GET", `/runs/${run.id}`);
      expect(read.body.stats).toMatchObject({ inputTokens: 0, outputTokens: 0 });
      const steps = (await server.request("GET", `/runs/${run.id}/steps`)).body as {
        items: Array<{ model: { usage: unknown } }>;
      };
      expect(steps.items.map((step) => step.model.usage)).toEqual([
        { inputTokens: 0, outputTokens: 0 },
        { inputTokens: 0, outputTokens: 0 },
      ]);
      expect(await finishedRuns()).toBe(before + 1);
    }
  });
});
