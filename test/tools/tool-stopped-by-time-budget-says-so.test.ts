/**
 * A tool still running when the run's wall-time budget (maxDurationMs) runs out is stopped
 * (README: "a model request, tool or wait for approval in flight is stopped"), and the run ends
 * `budget_exhausted`, not `aborted`: nobody cancelled it. The tool's result is what the model
 * reads (in this run's history, and in every later run of the session), so it must not say that
 * the run was cancelled: it says the time budget stopped it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withDeadline } from "../../src/agent/budget.js";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import { listFilesTool } from "../../src/tools/list-files.js";
import { readFileTool } from "../../src/tools/read-file.js";
import { searchFilesTool } from "../../src/tools/search-files.js";
import { shellTool } from "../../src/tools/shell.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { expectError, makeSandbox, runTool, writeTree } from "./helpers.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

it("a shell command stopped by the run's wall-time budget has a result that names the budget, not a cancellation", async () => {
  const session = (await server.request("POST", "/sessions", { body: { approval: { default: "allow" } } })).body;
  server.upstream.enqueue({
    toolCalls: [{ id: "call_sleep", name: "shell", arguments: JSON.stringify({ command: "sleep 30" }) }],
  });
  const answer = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
    body: { input: "wait a while", maxDurationMs: 1500 },
  });
  expect(answer.status).toBe(200);
  const { run } = answer.body;
  // The run was not cancelled: its budget ran out.
  expect(run.stopReason).toBe("budget_exhausted");
  expect(run.stopDetail).toMatch(/at tool call call_sleep \(shell\): this run has run for .* raise maxDurationMs/);

  const messages = (await server.request("GET", `/sessions/${session.id}/messages`)).body.items;
  const result = messages.find((m: { toolCallId?: string }) => m.toolCallId === "call_sleep");
  expect(result.isError).toBe(true);
  expect(result.metadata.errorCode).toBe(ToolErrorCode.shellAborted);
  expect(result.content).not.toMatch(/the run was cancelled/);
  expect(result.content).toMatch(/the run's time budget ran out \(maxDurationMs: 1500\)/);
});

describe("every workspace tool stopped by the deadline says the time budget ran out", () => {
  /** The signal a tool gets once the run's 1500 ms budget is spent, after it has fired. */
  const spent = async () => {
    const { signal } = withDeadline(new AbortController().signal, { maxDurationMs: 1500 }, 1500);
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    return signal;
  };
  const BUDGET = "because the run's time budget ran out (maxDurationMs: 1500)";

  it("read_file, list_files, search_files and shell", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "a.txt": "hello\n" });
    const signal = await spent();
    expect(
      expectError(await runTool(readFileTool, workspace, { path: "a.txt" }, signal), ToolErrorCode.readAborted),
    ).toBe(`reading "a.txt" was stopped ${BUDGET}`);
    expect(expectError(await runTool(listFilesTool, workspace, {}, signal), ToolErrorCode.listAborted)).toBe(
      `listing "." was stopped ${BUDGET}`,
    );
    expect(
      expectError(await runTool(searchFilesTool, workspace, { pattern: "hello" }, signal), ToolErrorCode.searchAborted),
    ).toBe(`the search was stopped ${BUDGET}`);
    expect(
      expectError(await runTool(shellTool, workspace, { command: "true" }, signal), ToolErrorCode.shellAborted),
    ).toBe("[not run: the run's time budget ran out (maxDurationMs: 1500) before the command started]");
  });

  it("a cancelled run still says it was cancelled", async () => {
    const { workspace } = await makeSandbox();
    const cancelled = new AbortController();
    cancelled.abort(new Error("by a DELETE /runs/{id} request"));
    const { signal } = withDeadline(cancelled.signal, { maxDurationMs: 1500 }, 0);
    expect(expectError(await runTool(listFilesTool, workspace, {}, signal), ToolErrorCode.listAborted)).toBe(
      'listing "." was stopped because the run was cancelled',
    );
  });
});
