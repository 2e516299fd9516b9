import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { call, stream, validatedStream } from "./support.js";

let server: TestServer;

/** The answers of each ifBusy mode, validated against openapi.yaml. */
describe("contract: ifBusy", () => {
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("enqueue answers 201 queued, lists it, streams run.queued; DELETE 202 finished; steer 202; bad ifBusy 400", async () => {
    let release!: () => void;
    server.upstream.enqueue(
      {
        toolCalls: [{ id: "call_w", name: "shell", arguments: '{"command":"true"}' }],
        gate: new Promise<void>((r) => (release = r)),
      },
      { text: "steered" },
    );
    const session = (await call(server, "POST", "/sessions", { body: { approval: { tools: { shell: "allow" } } } }))
      .body.id;
    const params = { id: session };
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
    release();
    const steered = await steering;
    expect(steered.status).toBe(202);
    expect(steered.body.id).toBe(active.body.id);

    const bad = await call(server, "POST", "/sessions/{id}/runs", { params, body: { input: "x", ifBusy: "wait" } });
    expect(bad.status).toBe(400);
  });
});
