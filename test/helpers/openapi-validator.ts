/**
 * Validates real responses against the project's `openapi.yaml`.
 *
 * The spec is loaded with `yaml` and its schemas compiled with Ajv (JSON Schema draft
 * 2020-12, as OpenAPI 3.1 uses; strict mode off so the OpenAPI keywords `discriminator`
 * and `example` are ignored). `validateResponse` throws, with a readable list of the
 * problems, when a body does not match the documented schema, when a required documented
 * header is missing, and when the spec documents no such operation, status or content
 * type: an undocumented answer fails the test. Every validated (method, path, status) is
 * recorded, and every validated event type, so a suite can assert that it exercised the
 * whole spec.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsPlugin from "ajv-formats";
import { parse } from "yaml";

type Json = Record<string, unknown>;

interface MediaTypeObject {
  schema?: Json;
}
interface HeaderObject {
  required?: boolean;
  schema?: Json;
  $ref?: string;
}
interface ResponseObject {
  $ref?: string;
  description?: string;
  headers?: Record<string, HeaderObject>;
  content?: Record<string, MediaTypeObject>;
}
interface OperationObject {
  operationId?: string;
  security?: unknown[];
  responses: Record<string, ResponseObject>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components: {
    schemas: Record<string, Json>;
    responses?: Record<string, ResponseObject>;
    headers?: Record<string, HeaderObject>;
  };
}

export const HTTP_METHODS = ["get", "post", "put", "patch", "delete", "head", "options"] as const;

export const specPath = fileURLToPath(new URL("../../openapi.yaml", import.meta.url));
export const specText = readFileSync(specPath, "utf8");
export const spec = parse(specText) as OpenApiDocument;

// `ajv-formats` is CommonJS: its default import is the plugin function itself at run time.
const addFormats = ((addFormatsPlugin as { default?: unknown }).default ?? addFormatsPlugin) as (ajv: Ajv2020) => void;

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);

const COMPONENTS_ID = "openapi-components";

/** Rewrites `#/components/schemas/X` references to the schema registered under COMPONENTS_ID. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== "object") return value;
  const out: Json = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === "$ref" && typeof child === "string") {
      if (!child.startsWith("#/components/schemas/")) throw new Error(`unsupported $ref in a schema: ${child}`);
      out[key] = `${COMPONENTS_ID}#/$defs/${child.slice("#/components/schemas/".length)}`;
    } else {
      out[key] = rewriteRefs(child);
    }
  }
  return out;
}

ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewriteRefs(spec.components.schemas) as Json });

const compiled = new Map<string, ValidateFunction>();

function compile(key: string, schema: Json): ValidateFunction {
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(rewriteRefs(schema) as Json);
    compiled.set(key, validate);
  }
  return validate;
}

function componentValidator(name: string): ValidateFunction {
  if (!spec.components.schemas[name]) throw new Error(`openapi.yaml has no schema components.schemas.${name}`);
  return compile(`#schema:${name}`, { $ref: `#/components/schemas/${name}` });
}

function formatErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 25)
    .map((e) => `  - ${e.instancePath || "(root)"} ${e.message ?? "is invalid"} ${JSON.stringify(e.params)}`)
    .join("\n");
}

function preview(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 1500 ? `${text.slice(0, 1500)}…` : text;
}

function resolveRef<T extends { $ref?: string }>(value: T, section: "responses" | "headers"): T {
  if (!value.$ref) return value;
  const prefix = `#/components/${section}/`;
  const name = value.$ref.startsWith(prefix) ? value.$ref.slice(prefix.length) : undefined;
  const target = name === undefined ? undefined : spec.components[section]?.[name];
  if (!target) throw new Error(`openapi.yaml: unresolvable $ref ${value.$ref}`);
  return target as T;
}

/** The operation of `method` on the path template `path`, or null. */
export function operation(method: string, path: string): OperationObject | null {
  const item = spec.paths[path];
  const op = item?.[method.toLowerCase()];
  return op && typeof op === "object" ? (op as OperationObject) : null;
}

/** Every documented (method, path template) with its documented statuses. */
export function documentedOperations(): { method: string; path: string; statuses: string[]; open: boolean }[] {
  const out: { method: string; path: string; statuses: string[]; open: boolean }[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of HTTP_METHODS) {
      const op = item[method] as OperationObject | undefined;
      if (!op) continue;
      out.push({
        method: method.toUpperCase(),
        path,
        statuses: Object.keys(op.responses),
        open: Array.isArray(op.security) && op.security.length === 0,
      });
    }
  }
  return out;
}

const validated = new Set<string>();
const seenEventTypes = new Set<string>();

/** `METHOD path status` of every response validated so far. */
export function validatedResponses(): ReadonlySet<string> {
  return validated;
}

/** The event types validated so far. */
export function validatedEventTypes(): ReadonlySet<string> {
  return seenEventTypes;
}

/** The `RunEvent` discriminator mapping: event type → schema reference. */
function eventMapping(): Record<string, string> {
  const discriminator = spec.components.schemas.RunEvent?.discriminator as
    | { mapping?: Record<string, string> }
    | undefined;
  if (!discriminator?.mapping) throw new Error("openapi.yaml: RunEvent has no discriminator mapping");
  return discriminator.mapping;
}

/** The event types the spec documents (the `RunEvent` discriminator mapping). */
export function documentedEventTypes(): string[] {
  return Object.keys(eventMapping());
}

/** Validates `value` against `components.schemas[name]`; throws with the problems. */
export function validateSchema(name: string, value: unknown): void {
  const validate = componentValidator(name);
  if (!validate(value)) {
    throw new Error(`does not match components.schemas.${name}:\n${formatErrors(validate.errors)}\n${preview(value)}`);
  }
}

/** Validates one event (an SSE frame's parsed `data`) against `RunEvent`. */
export function validateEvent(event: unknown): void {
  const validate = componentValidator("RunEvent");
  if (!validate(event)) {
    // oneOf reports every branch; name the branch the event's type selects, for a readable message.
    const type = (event as { type?: unknown } | null)?.type;
    const mapping = eventMapping();
    const target = typeof type === "string" ? mapping[type] : undefined;
    let detail = formatErrors(validate.errors);
    if (target) {
      const branch = compile(`#event:${type}`, { $ref: target });
      branch(event);
      detail = formatErrors(branch.errors);
    }
    throw new Error(
      `event does not match RunEvent${target ? ` (${target})` : ` (unknown type ${preview(type)})`}:\n${detail}\n${preview(event)}`,
    );
  }
  seenEventTypes.add((event as { type: string }).type);
}

/** A frame as an SSE client received it (`data` unparsed). */
export interface ReceivedFrame {
  id: string | undefined;
  event: string;
  data: string;
}

function parseFrames(frames: unknown, where: string): { id: string | undefined; event: string; data: unknown }[] {
  if (!Array.isArray(frames)) throw new Error(`${where}: an event-stream body must be given as its frames (an array)`);
  return (frames as ReceivedFrame[]).map((frame, i) => {
    let data: unknown;
    try {
      data = JSON.parse(frame.data);
    } catch {
      throw new Error(`${where}: frame ${i} (id ${frame.id}) has data that is not JSON: ${preview(frame.data)}`);
    }
    return { id: frame.id, event: frame.event, data };
  });
}

function headerValue(headers: Headers | Record<string, unknown> | undefined, name: string): unknown {
  if (!headers) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : headers[key];
}

export interface ResponseToValidate {
  method: string;
  /** The path template, e.g. "/runs/{id}". */
  path: string;
  status: number;
  /** The parsed JSON body; for `text/event-stream` the received frames; null or undefined for none. */
  body: unknown;
  /** The response's Content-Type (parameters ignored); default `application/json` when there is a body. */
  contentType?: string | null;
  /** The response's headers: documented required headers must be present and match. */
  headers?: Headers | Record<string, unknown>;
}

/**
 * Validates a real response against the spec: the operation and status must be documented,
 * the content type must be one the status documents (or none when it documents none), the
 * body must match its schema, documented required headers must be present and valid.
 */
export function validateResponse({ method, path, status, body, contentType, headers }: ResponseToValidate): void {
  const where = `${method.toUpperCase()} ${path} -> ${status}`;
  const op = operation(method, path);
  if (!op) throw new Error(`${where}: openapi.yaml documents no operation ${method.toUpperCase()} ${path}`);
  const documented = op.responses[String(status)];
  if (!documented) {
    throw new Error(
      `${where}: openapi.yaml does not document status ${status} (documented: ${Object.keys(op.responses).join(", ")})\nbody: ${preview(body)}`,
    );
  }
  const response = resolveRef(documented, "responses");

  for (const [name, raw] of Object.entries(response.headers ?? {})) {
    const header = resolveRef(raw, "headers");
    const value = headerValue(headers, name);
    if (value === undefined) {
      if (header.required && headers !== undefined) throw new Error(`${where}: required header ${name} is missing`);
      if (header.required) throw new Error(`${where}: pass the response headers: ${name} is required`);
      continue;
    }
    if (header.schema) {
      const validate = compile(`#header:${where}:${name}`, header.schema);
      if (!validate(value))
        throw new Error(`${where}: header ${name} ${preview(value)}:\n${formatErrors(validate.errors)}`);
    }
  }

  const hasBody = !(body === undefined || body === null || body === "");
  const media = contentType?.split(";")[0]?.trim().toLowerCase() || undefined;
  if (!response.content) {
    if (hasBody || media) throw new Error(`${where}: the spec documents no body, got ${media ?? "?"} ${preview(body)}`);
    validated.add(`${method.toUpperCase()} ${path} ${status}`);
    return;
  }
  const mediaType = media ?? "application/json";
  const content = response.content[mediaType];
  if (!content) {
    throw new Error(
      `${where}: content type ${mediaType} is not documented (documented: ${Object.keys(response.content).join(", ")})`,
    );
  }
  if (!content.schema) throw new Error(`${where}: ${mediaType} has no schema in openapi.yaml`);

  if (mediaType === "text/event-stream") {
    validateEventStream(where, content.schema, body);
    validated.add(`${method.toUpperCase()} ${path} ${status}`);
    return;
  }

  const validate = compile(`${where} ${mediaType}`, content.schema);
  if (!validate(body)) {
    throw new Error(
      `${where} (${mediaType}) does not match the spec:\n${formatErrors(validate.errors)}\nbody: ${preview(body)}`,
    );
  }
  validated.add(`${method.toUpperCase()} ${path} ${status}`);
}

/**
 * An event stream is documented as a string whose schema names its frames' data schema in
 * `x-event-schema`. Run event streams (`RunEvent`) also need `id` = `seq`, `event` = `type`,
 * consecutive ids; other streams (data-only frames) may end with a `[DONE]` frame.
 */
function validateEventStream(where: string, schema: Json, frames: unknown): void {
  const ref = typeof schema.$ref === "string" ? schema.$ref : undefined;
  const streamSchema = ref ? spec.components.schemas[ref.replace("#/components/schemas/", "")] : schema;
  if (streamSchema?.type !== "string") throw new Error(`${where}: an event stream must be documented as a string`);
  const eventRef = (streamSchema["x-event-schema"] as { $ref?: unknown } | undefined)?.$ref;
  if (typeof eventRef !== "string") throw new Error(`${where}: the event stream schema names no x-event-schema`);
  const eventSchema = eventRef.replace("#/components/schemas/", "");
  if (eventSchema !== "RunEvent") {
    if (!Array.isArray(frames))
      throw new Error(`${where}: an event-stream body must be given as its frames (an array)`);
    (frames as ReceivedFrame[]).forEach((frame, i) => {
      if (frame.data === "[DONE]" && i === frames.length - 1) return;
      let data: unknown;
      try {
        data = JSON.parse(frame.data);
      } catch {
        throw new Error(`${where}: frame ${i} has data that is not JSON: ${preview(frame.data)}`);
      }
      validateSchema(eventSchema, data);
    });
    return;
  }
  const parsed = parseFrames(frames, where);
  parsed.forEach((frame, i) => {
    const data = frame.data as { seq?: unknown; type?: unknown };
    if (frame.id !== String(data?.seq)) {
      throw new Error(`${where}: frame ${i} has id ${frame.id} but its data has seq ${preview(data?.seq)}`);
    }
    if (frame.event !== data?.type) {
      throw new Error(`${where}: frame ${i} has event ${frame.event} but its data has type ${preview(data?.type)}`);
    }
    const previous = parsed[i - 1];
    if (previous && Number(frame.id) !== Number(previous.id) + 1) {
      throw new Error(`${where}: frame ids are not consecutive: ${previous.id} then ${frame.id}`);
    }
    validateEvent(frame.data);
  });
}
