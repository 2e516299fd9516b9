import { mkdir, readdir, readFile, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolErrorCode } from "../../src/tools/error-codes.js";
import {
  bindWorkspaceTools,
  defaultApprovalPolicy,
  describeWorkspaceTools,
  locateInWorkspace,
  type ShellSandbox,
  UNSANDBOXED,
  WORKSPACE_TOOL_NAMES,
  workspaceToolsFor,
} from "../../src/tools/index.js";
import { PATH_MAX_CHARS } from "../../src/tools/path-input.js";
import { expectOk, makeSandbox, writeTree } from "./helpers.js";

const SANDBOXED: ShellSandbox = {
  kind: "bwrap",
  bwrap: "/usr/bin/bwrap",
  network: false,
  tmpBytes: 256 * 1024 * 1024,
  maxProcesses: 1024,
  options: { disableUserns: true },
};

describe("the workspace tool registry", () => {
  it("holds the six tools, and the read-only shell a session may name", () => {
    expect(WORKSPACE_TOOL_NAMES).toEqual([
      "list_files",
      "read_file",
      "search_files",
      "write_file",
      "edit_file",
      "shell",
      "shell_readonly",
    ]);
  });

  it("offers shell_readonly (allowed by default) only with a sandbox to enforce it", () => {
    expect(workspaceToolsFor(UNSANDBOXED).map((tool) => tool.name)).not.toContain("shell_readonly");
    const sandboxed = workspaceToolsFor(SANDBOXED);
    expect(sandboxed.map((tool) => tool.name).slice(-2)).toEqual(["shell", "shell_readonly"]);
    expect(defaultApprovalPolicy("shell_readonly", sandboxed)).toBe("allow");
    expect(defaultApprovalPolicy("shell", sandboxed)).toBe("ask");
    // Unsandboxed, a session naming it gets no read-only shell (and never an unenforced one).
    expect(defaultApprovalPolicy("shell_readonly")).toBe("ask");
  });

  it("allows read-only tools by default and asks for the others; an unknown name asks", () => {
    expect(Object.fromEntries(WORKSPACE_TOOL_NAMES.map((name) => [name, defaultApprovalPolicy(name)]))).toEqual({
      list_files: "allow",
      read_file: "allow",
      search_files: "allow",
      write_file: "ask",
      edit_file: "ask",
      shell: "ask",
      shell_readonly: "ask",
    });
    expect(defaultApprovalPolicy("rm_rf")).toBe("ask");
  });

  it.each(workspaceToolsFor(SANDBOXED).map((tool) => [tool.name, tool] as const))(
    "%s has a clean JSON Schema of its input, every field described",
    (_, tool) => {
      const schema = z.toJSONSchema(tool.inputSchema, { io: "input" });
      expect(schema).toMatchObject({ type: "object", additionalProperties: false });
      const properties = schema.properties as Record<string, { description?: string }>;
      expect(Object.keys(properties).length).toBeGreaterThan(0);
      for (const [name, property] of Object.entries(properties)) {
        expect(property.description, `${tool.name}.${name}`).toMatch(/\w{3,}/);
      }
      expect(JSON.stringify(schema)).not.toMatch(/"\$ref"|"\$defs"/);
      expect(() => new Ajv2020({ strict: true }).compile(schema)).not.toThrow();
      expect(tool.description.length).toBeGreaterThan(80);
    },
  );

  it("describes the tools for GET /tools with their schemas, default approval and the shell's sandbox", () => {
    const described = describeWorkspaceTools(UNSANDBOXED);
    expect(described.map((tool) => [tool.name, tool.defaultApproval, tool.sandbox])).toEqual([
      ["list_files", "allow", undefined],
      ["read_file", "allow", undefined],
      ["search_files", "allow", undefined],
      ["write_file", "ask", undefined],
      ["edit_file", "ask", undefined],
      ["shell", "ask", "none"],
    ]);
    expect(described[1]?.inputSchema).toMatchObject({ required: ["path"] });
    // Every path the model may send is bounded, and the schema it is sent says so.
    const paths = Object.fromEntries(
      described.map((tool) => [tool.name, (tool.inputSchema.properties as Record<string, unknown>).path]),
    );
    expect(paths).toEqual({
      list_files: { type: "string", maxLength: PATH_MAX_CHARS, description: expect.any(String) },
      read_file: { type: "string", minLength: 1, maxLength: PATH_MAX_CHARS, description: expect.any(String) },
      search_files: { type: "string", maxLength: PATH_MAX_CHARS, description: expect.any(String) },
      write_file: { type: "string", minLength: 1, maxLength: PATH_MAX_CHARS, description: expect.any(String) },
      edit_file: { type: "string", minLength: 1, maxLength: PATH_MAX_CHARS, description: expect.any(String) },
      shell: undefined,
    });
    expect(describeWorkspaceTools(SANDBOXED).slice(-2)).toMatchObject([
      { name: "shell", defaultApproval: "ask", readOnly: false, sandbox: "bwrap" },
      { name: "shell_readonly", defaultApproval: "allow", readOnly: true, sandbox: "bwrap" },
    ]);
  });

  it("binds the tools to a workspace as AgentTools", async () => {
    const { workspace } = await makeSandbox();
    await writeTree(workspace, { "hello.txt": "hi\n" });
    const tools = bindWorkspaceTools({ workspace });
    expect(tools.map((tool) => [tool.name, tool.readOnly])).toEqual([
      ["list_files", true],
      ["read_file", true],
      ["search_files", true],
      ["write_file", false],
      ["edit_file", false],
      ["shell", false],
    ]);
    const read = tools.find((tool) => tool.name === "read_file")!;
    const outcome = await read.execute(read.inputSchema.parse({ path: "hello.txt" }), {
      toolCallId: "c1",
      signal: new AbortController().signal,
    });
    expect(expectOk(outcome)).toBe("     1\thi");
  });

  it("a workspace replaced by a symlink (outside, to another session, to the root) runs no tool: a shell command cannot redirect later reads or writes", async () => {
    const { base, outside } = await makeSandbox();
    const root = join(base, "root");
    const mine = join(root, "ses_a");
    const other = join(root, "ses_b");
    await mkdir(mine, { recursive: true });
    await writeTree(other, { "secret.txt": "session b\n" });
    await writeTree(outside, { "secret.txt": "outside\n" });
    await writeTree(root, { "secret.txt": "root\n" });
    const tools = bindWorkspaceTools({ workspace: mine });
    // Every tool each checks the workspace itself: one left out here fails the test.
    const inputs: Record<string, unknown> = {
      list_files: {},
      read_file: { path: "secret.txt" },
      search_files: { pattern: "session|outside|root" },
      write_file: { path: "planted.txt", content: "planted\n" },
      edit_file: { path: "secret.txt", oldText: "\n", newText: "edited\n" },
      shell: { command: "cat secret.txt; echo planted > planted.txt" },
    };
    expect(tools.map((tool) => tool.name).sort()).toEqual(Object.keys(inputs).sort());
    const run = (name: string, input: unknown) => {
      const tool = tools.find((t) => t.name === name)!;
      return tool.execute(tool.inputSchema.parse(input), { toolCallId: "c1", signal: new AbortController().signal });
    };
    // In place: the file is simply not in this workspace.
    expect(await run("read_file", { path: "secret.txt" })).toMatchObject({ ok: false, errorCode: "NOT_FOUND" });
    for (const target of [outside, other, root]) {
      await rm(mine, { recursive: true, force: true });
      await symlink(target, mine);
      for (const [name, input] of Object.entries(inputs)) {
        const outcome = await run(name, input);
        expect(outcome, `${name} via a link to ${target}`).toMatchObject({
          ok: false,
          errorCode: "WORKSPACE_UNAVAILABLE",
        });
        expect(JSON.stringify(outcome)).not.toMatch(/session b|outside\\n|root\\n/);
      }
      expect((await readdir(target)).sort(), `nothing written via a link to ${target}`).not.toContain("planted.txt");
      expect(await readFile(join(target, "secret.txt"), "utf8")).not.toMatch(/edited/);
    }
  });

  it("the workspace is confined by its pinned path: a path through a workspace replaced after the check is refused", async () => {
    const { base, outside } = await makeSandbox();
    const mine = join(base, "ses_a");
    await mkdir(mine);
    await writeTree(outside, { "secret.txt": "outside\n" });
    // locateInWorkspace opens the bound path itself, never a fresh realpath of it.
    const located = await locateInWorkspace({ workspace: mine, path: "secret.txt" });
    expect(located).toMatchObject({ ok: true, at: { kind: "missing" } });
    if (located.ok) await located.at.close();
    await rm(mine, { recursive: true });
    await symlink(outside, mine);
    expect(await locateInWorkspace({ workspace: mine, path: "secret.txt" })).toMatchObject({
      ok: false,
      outcome: { errorCode: "WORKSPACE_UNAVAILABLE" },
    });
  });

  it("binds only the named subset, in registry order, and throws on an unknown name", async () => {
    const { workspace } = await makeSandbox();
    expect(bindWorkspaceTools({ workspace, names: ["shell", "read_file"] }).map((tool) => tool.name)).toEqual([
      "read_file",
      "shell",
    ]);
    expect(bindWorkspaceTools({ workspace, names: [] })).toEqual([]);
    expect(() => bindWorkspaceTools({ workspace, names: ["read_file", "format_disk"] })).toThrow(/format_disk/);
    // A known tool this server does not offer is left out, not an error.
    expect(bindWorkspaceTools({ workspace, names: ["shell_readonly", "read_file"] }).map((tool) => tool.name)).toEqual([
      "read_file",
    ]);
  });

  it("has distinct, stable error codes", () => {
    const codes = Object.values(ToolErrorCode);
    expect(new Set(codes).size).toBe(codes.length);
    expect(ToolErrorCode).toMatchObject({
      pathOutsideWorkspace: "PATH_OUTSIDE_WORKSPACE",
      notFound: "NOT_FOUND",
      binaryFile: "BINARY_FILE",
      searchTimeout: "SEARCH_TIMEOUT",
      shellFailed: "SHELL_FAILED",
      shellTimeout: "SHELL_TIMEOUT",
      shellAborted: "SHELL_ABORTED",
      readAborted: "READ_ABORTED",
    });
  });
});
