import { expect } from "vitest";
import { assertValidHistory } from "../../src/agent/history.js";
import type { TestServer } from "./test-server.js";

/** A session's committed history over HTTP; it must pass the loop's own validation (law 4). */
export async function validHistory(server: TestServer, sessionId: string) {
  const history = (await server.request("GET", `/sessions/${sessionId}/messages`)).body.items;
  expect(() => assertValidHistory(history)).not.toThrow();
  return history as { role: string; toolCallId?: string; metadata?: { errorCode: string | null } }[];
}

/** The error code of each tool result, in order. */
export const toolResultCodes = (history: Awaited<ReturnType<typeof validHistory>>) =>
  history.filter((m) => m.role === "tool").map((m) => m.metadata?.errorCode);
