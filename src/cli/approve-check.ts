import { z } from "zod";
import type { ApiClient } from "./api-client.js";
import type { AutoApprove } from "./args.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";
import { printable } from "./printable.js";

const ToolsBody = z.object({ items: z.array(z.object({ name: z.string() })) });

/**
 * Refuses (usage, exit 64) `--approve` names that are no tool of the server, before anything is
 * started: a misspelt name approves nothing, and the run would stop to ask (or, with nobody to
 * ask, wait for its approval's timeout). Reads `GET /tools` only when names are given.
 */
export async function checkApprovedTools(client: ApiClient, approve: AutoApprove): Promise<void> {
  if (approve.tools.size === 0) return;
  const { items } = await client.json({ method: "GET", path: "/tools", schema: ToolsBody });
  const known = new Set(items.map((tool) => tool.name));
  const unknown = [...approve.tools].filter((name) => !known.has(name));
  if (unknown.length === 0) return;
  throw new CliError(
    `--approve names no tool of this server: ${printable(unknown.join(", "))} (its tools: ${printable([...known].join(", "))}; or all) (see agent-server --help)`,
    EXIT.usage,
  );
}
