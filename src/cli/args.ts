import { parseArgs } from "node:util";
import { messageOf } from "../message-of.js";
import { CliError } from "./cli-error.js";
import { EXIT } from "./exit-codes.js";

/** Which tool calls the client approves by itself instead of asking. */
export interface AutoApprove {
  all: boolean;
  tools: ReadonlySet<string>;
}

export interface RunOptions {
  /** The run's input; `-` means: read it from stdin. */
  prompt: string;
  session?: string;
  approve: AutoApprove;
  json: boolean;
  maxTurns?: number;
  system?: string;
  model?: string;
  workspace?: string;
}

export type Command = { kind: "help" } | { kind: "version" } | { kind: "run"; options: RunOptions };

const usage = (message: string): CliError => new CliError(`${message} (see agent-server --help)`, EXIT.usage);

/** Reads the command line (without `node` and the script). Throws a usage `CliError` for a bad one. */
export function parseCommand(argv: readonly string[]): Command {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw usage(messageOf(error));
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  const [command, ...words] = positionals;
  if (command === undefined) throw usage('a command is missing: agent-server run "<prompt>"');
  if (command !== "run") throw usage(`unknown command "${command}"`);
  const prompt = words.join(" ");
  if (prompt.trim() === "")
    throw usage('the prompt is missing: agent-server run "<prompt>" (or - to read it from stdin)');
  for (const name of ["session", "system", "model", "workspace"] as const) {
    if (values[name] !== undefined && values[name].trim() === "") throw usage(`--${name} is empty`);
  }
  if (values.session !== undefined) {
    const newOnly = (["system", "model", "workspace"] as const).filter((name) => values[name] !== undefined);
    if (newOnly.length > 0) {
      throw usage(
        `--${newOnly.join(", --")} set${newOnly.length === 1 ? "s" : ""} up a new session: not with --session`,
      );
    }
  }
  return {
    kind: "run",
    options: {
      prompt,
      session: values.session,
      approve: autoApprove(values.approve ?? []),
      json: values.json ?? false,
      maxTurns: values["max-turns"] === undefined ? undefined : turns(values["max-turns"]),
      system: values.system,
      model: values.model,
      workspace: values.workspace,
    },
  };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "V" },
      session: { type: "string", short: "s" },
      approve: { type: "string", short: "a", multiple: true },
      json: { type: "boolean" },
      "max-turns": { type: "string" },
      system: { type: "string" },
      model: { type: "string" },
      workspace: { type: "string" },
    },
  });
}

function turns(text: string): number {
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1 || Number(text) > 1000) {
    throw usage(`--max-turns must be a whole number from 1 to 1000, not "${text}"`);
  }
  return Number(text);
}

/** `--approve write_file,shell --approve edit_file`, or `--approve all`. */
function autoApprove(lists: readonly string[]): AutoApprove {
  const names = lists.flatMap((list) => list.split(",")).map((name) => name.trim());
  if (names.some((name) => name === "")) throw usage("--approve takes tool names separated by commas, or all");
  return { all: names.includes("all"), tools: new Set(names.filter((name) => name !== "all")) };
}
