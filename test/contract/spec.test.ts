/**
 * The spec against the code's own route table and request schemas, and the validator
 * against answers the spec does not allow (so a passing contract suite means something).
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ChatBody } from "../../src/chat/chat-request.js";
import { WEBHOOK_EVENTS } from "../../src/domain/webhook.js";
import {
  CreateSessionBody,
  DecisionBody,
  EventsQuery,
  MessagePageQuery,
  PageQuery,
  StartRunBody,
  StartRunQuery,
} from "../../src/http/schemas.js";
import { defaultRunLimits } from "../../src/store/runs.js";
import {
  documentedOperations,
  operation,
  spec,
  validateEvent,
  validateResponse,
} from "../helpers/openapi-validator.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const routesDir = fileURLToPath(new URL("../../routes/", import.meta.url));

/** `METHOD /path/{param}` for every `app.get|post|delete|put|patch("...")` in routes/*.ts. */
function routesInSource(): string[] {
  const found: string[] = [];
  for (const file of readdirSync(routesDir).filter((f) => f.endsWith(".ts"))) {
    const source = readFileSync(`${routesDir}${file}`, "utf8");
    for (const match of source.matchAll(/\bapp\.(get|post|delete|put|patch)\(\s*"([^"]+)"/g)) {
      found.push(`${match[1]?.toUpperCase()} ${match[2]?.replace(/:(\w+)/g, "{$1}")}`);
    }
  }
  return found.sort();
}

/** `METHOD /path/{param}` for every route Fastify has, from its route tree (HEAD, which Fastify adds to every GET, left out). */
function routesInApp(tree: string): string[] {
  const found: string[] = [];
  const prefixes: string[] = [];
  for (const line of tree.split("\n")) {
    const match = /^([│ ]*)[├└]── (\S+) \(([^)]+)\)$/u.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? "").length / 4;
    const full = `${depth > 0 ? prefixes[depth - 1] : ""}${match[2]}`;
    prefixes[depth] = full;
    for (const method of (match[3] ?? "").split(", ")) {
      if (method !== "HEAD") found.push(`${method} ${full.replace(/:(\w+)/g, "{$1}")}`);
    }
  }
  return found.sort();
}

const documented = () =>
  documentedOperations()
    .map((op) => `${op.method} ${op.path}`)
    .sort();

describe("the spec and the code's routes", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("every route in routes/*.ts is in the spec, and every spec operation is in routes/*.ts", () => {
    const inSource = routesInSource();
    expect(inSource.length).toBeGreaterThanOrEqual(17);
    expect(inSource).toEqual(documented());
  });

  it("the running app's route table is exactly the spec's operations", () => {
    const inApp = routesInApp(server.app.printRoutes({ commonPrefix: false }));
    expect(inApp).toEqual(documented());
    for (const op of documentedOperations()) {
      const url = op.path.replace(/\{(\w+)\}/g, ":$1");
      expect(server.app.hasRoute({ method: op.method as "GET", url }), `${op.method} ${url}`).toBe(true);
    }
  });

  it("path parameters in the spec match each template's segments", () => {
    const all = spec.components as unknown as { parameters: Record<string, ParameterObject> };
    for (const [path, item] of Object.entries(spec.paths)) {
      const inTemplate = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const declared = ((item.parameters ?? []) as { $ref: string }[])
        .map((p) => all.parameters[p.$ref.replace("#/components/parameters/", "")])
        .filter((p) => p?.in === "path")
        .map((p) => p?.name)
        .sort();
      expect(declared, path).toEqual(inTemplate);
    }
  });
});

/** The property names and required list of a zod request schema (its object variant) as JSON Schema. */
function zodShape(schema: z.ZodType): { properties: string[]; required: string[] } {
  const json = z.toJSONSchema(schema, { io: "input" }) as {
    properties?: Record<string, unknown>;
    required?: string[];
    anyOf?: { type?: string; properties?: Record<string, unknown>; required?: string[] }[];
  };
  const object = json.properties ? json : json.anyOf?.find((v) => v.type === "object");
  return { properties: Object.keys(object?.properties ?? {}).sort(), required: [...(object?.required ?? [])].sort() };
}

function specShape(name: string): { properties: string[]; required: string[] } {
  const schema = spec.components.schemas[name] as { properties?: Record<string, unknown>; required?: string[] };
  return { properties: Object.keys(schema.properties ?? {}).sort(), required: [...(schema.required ?? [])].sort() };
}

type ParameterObject = { name: string; in: string; required?: boolean };
function queryParameters(method: string, path: string): { properties: string[]; required: string[] } {
  const all = spec.components as unknown as { parameters: Record<string, ParameterObject> };
  const op = operation(method, path) as unknown as { parameters?: { $ref: string }[] };
  const params = (op.parameters ?? [])
    .map((p) => all.parameters[p.$ref.replace("#/components/parameters/", "")])
    .filter((p): p is ParameterObject => p?.in === "query");
  return {
    properties: params.map((p) => p.name).sort(),
    required: params
      .filter((p) => p.required)
      .map((p) => p.name)
      .sort(),
  };
}

describe("the spec and the code's request schemas", () => {
  it("request bodies have the fields (and required fields) the zod schemas accept", () => {
    expect(specShape("CreateSessionRequest")).toEqual(zodShape(CreateSessionBody));
    expect(specShape("StartRunRequest")).toEqual(zodShape(StartRunBody));
    expect(specShape("DecisionRequest")).toEqual(zodShape(DecisionBody));
    expect(specShape("ChatRequest")).toEqual(zodShape(ChatBody));
  });

  it("a webhook target's events are the server's webhook events, all of them allowed in one target", () => {
    const schemas = spec.components.schemas as Record<
      string,
      { enum?: string[]; properties?: Record<string, unknown> }
    >;
    expect(schemas.WebhookEvent?.enum).toEqual([...WEBHOOK_EVENTS]);
    expect(schemas.WebhookTarget?.properties?.events).toMatchObject({ minItems: 1, maxItems: WEBHOOK_EVENTS.length });
  });

  it("an Idempotency-Key conflict's `differs` may name every field a retry is compared on", () => {
    const conflict = JSON.stringify(spec.components.schemas.StartRunConflictError);
    const named = /"differs":\{[^}]*"enum":(\[[^\]]*\])/.exec(conflict)?.[1];
    const compared = [
      "input",
      "maxTurns",
      "contextMaxChars",
      "approval",
      ...Object.keys(defaultRunLimits()),
      "webhook",
    ];
    expect(JSON.parse(named ?? "[]").sort()).toEqual(compared.sort());
  });

  it("query parameters are the ones the zod schemas accept", () => {
    const page = zodShape(PageQuery);
    for (const path of ["/sessions", "/sessions/{id}/runs"]) {
      expect(queryParameters("GET", path), path).toEqual(page);
    }
    expect(queryParameters("GET", "/sessions/{id}/messages")).toEqual(zodShape(MessagePageQuery));
    expect(queryParameters("POST", "/sessions/{id}/runs")).toEqual(zodShape(StartRunQuery));
    expect(queryParameters("GET", "/runs/{id}/events")).toEqual(zodShape(EventsQuery));
  });
});

describe("the validator refuses what the spec does not document", () => {
  const run = {
    id: "run_01abc",
    sessionId: "ses_01abc",
    status: "running",
    stopReason: null,
    stopDetail: null,
    error: null,
    input: "hi",
    maxTurns: 20,
    contextMaxChars: null,
    maxTokens: null,
    maxDurationMs: null,
    maxToolCalls: null,
    loopRepeatLimit: 3,
    planning: false,
    plan: null,
    stats: { modelCalls: 0, toolCalls: 0, turns: 0, inputTokens: 0, outputTokens: 0, durationMs: 0 },
    createdAt: "2026-01-01T00:00:00.000Z",
    finishedAt: null,
  };

  it("accepts a documented answer", () => {
    expect(() => validateResponse({ method: "GET", path: "/runs/{id}", status: 200, body: run })).not.toThrow();
  });

  it("refuses an undocumented operation, status or content type", () => {
    expect(() => validateResponse({ method: "PUT", path: "/runs/{id}", status: 200, body: run })).toThrow(
      /documents no operation PUT/,
    );
    expect(() => validateResponse({ method: "GET", path: "/runs/{id}", status: 418, body: run })).toThrow(
      /does not document status 418/,
    );
    expect(() =>
      validateResponse({ method: "GET", path: "/runs/{id}", status: 200, body: "x", contentType: "text/plain" }),
    ).toThrow(/content type text\/plain is not documented/);
  });

  it("refuses a body with a missing, extra or mistyped field, naming it", () => {
    const { stats: _stats, ...noStats } = run;
    expect(() => validateResponse({ method: "GET", path: "/runs/{id}", status: 200, body: noStats })).toThrow(
      /required property 'stats'/,
    );
    expect(() =>
      validateResponse({ method: "GET", path: "/runs/{id}", status: 200, body: { ...run, secret: 1 } }),
    ).toThrow(/must NOT have additional properties.*secret/);
    expect(() =>
      validateResponse({ method: "GET", path: "/runs/{id}", status: 200, body: { ...run, status: "paused" } }),
    ).toThrow(/\/status must be equal to one of the allowed values/);
    expect(() =>
      validateResponse({
        method: "GET",
        path: "/runs/{id}",
        status: 404,
        body: { error: { code: "GONE", message: "x" } },
      }),
    ).toThrow(/\/error\/code/);
  });

  it("refuses a body where none is documented and a missing required header", () => {
    expect(() =>
      validateResponse({ method: "DELETE", path: "/sessions/{id}", status: 204, body: { ok: true } }),
    ).toThrow(/documents no body/);
    const error = { error: { code: "UNAUTHORIZED", message: "no" } };
    expect(() =>
      validateResponse({ method: "GET", path: "/tools", status: 401, body: error, headers: new Headers() }),
    ).toThrow(/required header WWW-Authenticate is missing/);
  });

  it("refuses event-stream frames whose id, event and data disagree or skip", () => {
    const frame = (seq: number, type = "run.started") => ({
      id: String(seq),
      event: type,
      data: JSON.stringify({ runId: "run_1", seq, type, at: "2026-01-01T00:00:00.000Z" }),
    });
    const check = (body: unknown) =>
      validateResponse({
        method: "GET",
        path: "/runs/{id}/events",
        status: 200,
        body,
        contentType: "text/event-stream",
      });
    expect(() => check([frame(1), frame(2, "text.delta")])).toThrow(/text\.delta|required property 'text'/);
    expect(() => check([{ ...frame(1), id: "2" }])).toThrow(/has id 2 but its data has seq 1/);
    expect(() => check([{ ...frame(1), event: "message" }])).toThrow(/has event message/);
    expect(() => check([frame(1), frame(3)])).toThrow(/not consecutive/);
    expect(() => check([frame(1), frame(2)])).not.toThrow();
  });

  it("validateEvent refuses an unknown type, a missing payload field and an extra field", () => {
    const base = { runId: "run_x", seq: 1, at: "2026-01-01T00:00:00.000Z" };
    expect(() => validateEvent({ ...base, type: "run.started" })).not.toThrow();
    expect(() => validateEvent({ ...base, type: "run.exploded" })).toThrow(/unknown type "run.exploded"/);
    expect(() => validateEvent({ ...base, type: "turn.started" })).toThrow(/TurnStartedEvent[\s\S]*'turn'/);
    expect(() => validateEvent({ ...base, type: "run.started", extra: true })).toThrow(/additional properties/);
    expect(() => validateEvent({ ...base, seq: 0, type: "run.started" })).toThrow(/\/seq/);
  });
});
