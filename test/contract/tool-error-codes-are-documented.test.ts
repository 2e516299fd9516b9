/**
 * Every `errorCode` the server can store on a tool result (a workspace tool's, a plan tool's,
 * or one the loop writes itself) is named in openapi.yaml's ToolResultMetadata.errorCode, so a
 * client reading results from the spec knows them all (BUDGET_EXHAUSTED was missing); and
 * every code named there is one the server can store.
 */
import { expect, it } from "vitest";
import { PlanErrorCode } from "../../src/agent/plan.js";
import { TOO_MANY_TOOL_CALLS } from "../../src/agent/tool-call-cap.js";
import { ToolResultCode } from "../../src/agent/tool-results.js";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { spec } from "../helpers/openapi-validator.js";

const storable = new Set<string>([
  ...Object.values(ToolErrorCode),
  ...Object.values(PlanErrorCode),
  ...Object.values(ToolResultCode),
  TOO_MANY_TOOL_CALLS,
]);

/** The codes ToolResultMetadata.errorCode names: its `enum`, if any, and the `CODE`s its description quotes. */
function documentedCodes(): Set<string> {
  const schemas = spec.components?.schemas as Record<string, { properties?: Record<string, unknown> }>;
  const errorCode = schemas.ToolResultMetadata?.properties?.errorCode as { enum?: unknown[]; description?: string };
  const quoted = [...(errorCode.description ?? "").matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] ?? "");
  const listed = (errorCode.enum ?? []).filter((code): code is string => typeof code === "string");
  return new Set([...listed, ...quoted]);
}

it("openapi.yaml names every errorCode the server can store on a tool result", () => {
  const documented = documentedCodes();
  expect([...storable].filter((code) => !documented.has(code))).toEqual([]);
});

it("openapi.yaml names no errorCode the server cannot store", () => {
  expect([...documentedCodes()].filter((code) => !storable.has(code))).toEqual([]);
});
