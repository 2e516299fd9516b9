/**
 * METRICS_PORT on the real server process: GET /metrics is served there (without keys) and
 * not on PORT; a bad METRICS_PORT stops the start naming it (a busy one: see
 * test/deploy/configuration.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { freePort, startChildServer } from "../helpers/child-server.js";
import { Exposition } from "../helpers/prometheus-text.js";
import { tempDir } from "../helpers/temp-dir.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const base = { OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };

describe("METRICS_PORT", () => {
  it("serves /metrics on its own port of HOST, without keys, and not on PORT", async () => {
    const dir = tempDir("agent-metrics-port-");
    cleanups.push(dir.cleanup);
    const upstream = await startFakeUpstream();
    cleanups.push(() => upstream.close());
    const key = "k".repeat(32);
    const metricsPort = await freePort();
    const child = await startChildServer({
      dir: dir.path,
      upstreamURL: upstream.baseURL,
      env: { METRICS_PORT: String(metricsPort), AGENT_API_KEYS: key },
    });
    cleanups.push(async () => {
      child.process.kill("SIGTERM");
      await child.exited;
    });
    const auth = { authorization: `Bearer ${key}` };

    // A run, so the counters have something to show.
    upstream.enqueue({ text: "hello" });
    const session = await (
      await fetch(`${child.url}/sessions`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: "{}",
      })
    ).json();
    const run = await fetch(`${child.url}/sessions/${session.id}/runs?wait=true`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ input: "hi" }),
    });
    expect(run.status).toBe(200);

    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.status).toBe(200);
    const metrics = new Exposition(await scraped.text());
    expect(metrics.value("agent_runs_finished_total", { status: "finished", stop_reason: "complete" })).toBe(1);
    expect(metrics.type("process_resident_memory_bytes")).toBe("GAUGE");

    expect((await fetch(`${child.url}/metrics`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${child.url}/metrics`)).status).toBe(401);
    // Only /metrics is there.
    expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(404);

    child.process.kill("SIGTERM");
    expect(await child.exited).toBe(0);
  });

  it("must be a port other than PORT", () => {
    expect(() => loadConfig({ ...base, PORT: "3000", METRICS_PORT: "3000" })).toThrow(
      /METRICS_PORT: must differ from PORT/,
    );
    expect(() => loadConfig({ ...base, METRICS_PORT: "70000" })).toThrow(/METRICS_PORT: /);
    expect(loadConfig({ ...base, METRICS_PORT: "9464" }).METRICS_PORT).toBe(9464);
    expect(loadConfig(base).METRICS_PORT).toBeUndefined();
  });

  it("OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL", () => {
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: must be an http or https URL/,
    );
    expect(
      loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }).OTEL_EXPORTER_OTLP_ENDPOINT,
    ).toBe("http://127.0.0.1:4318");
  });
});
