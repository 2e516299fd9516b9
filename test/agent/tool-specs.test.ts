import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolSpecs } from "../../src/agent/model-turn.js";
import type { AnyAgentTool } from "../../src/agent/tool.js";
import { toolOk } from "../../src/agent/tool.js";

const shared = z.strictObject({ command: z.string().describe("what to run") });
const tool = (name: string, description: string, inputSchema: z.ZodType = shared): AnyAgentTool => ({
  name,
  description,
  inputSchema,
  readOnly: false,
  execute: async () => toolOk("done"),
});
const specsOf = (tools: AnyAgentTool[]) => toolSpecs(new Map(tools.map((t) => [t.name, t])));

describe("the tools' specs as offered to the model", () => {
  it("are made once and reused when the tools are bound again, also for two tools sharing one schema", () => {
    const bind = () => [tool("shell", "runs a command"), tool("shell_readonly", "runs a command, read-only")];
    const first = specsOf(bind());
    const again = specsOf(bind());
    expect(again[0]).toBe(first[0]);
    expect(again[1]).toBe(first[1]);
    expect(first.map((s) => s.name)).toEqual(["shell", "shell_readonly"]);
    expect(first[1]).toMatchObject({
      description: "runs a command, read-only",
      parameters: { type: "object", properties: { command: { type: "string", description: "what to run" } } },
    });
  });

  it("follow a changed description or a new schema under the same name", () => {
    const before = specsOf([tool("probe", "first words")])[0];
    const described = specsOf([tool("probe", "other words")])[0];
    expect(described).not.toBe(before);
    expect(described?.description).toBe("other words");
    const [reschemed] = specsOf([tool("probe", "other words", z.strictObject({ path: z.string() }))]);
    expect(reschemed?.parameters).toMatchObject({ properties: { path: { type: "string" } } });
    expect(Object.keys(reschemed?.parameters.properties ?? {})).toEqual(["path"]);
  });
});
