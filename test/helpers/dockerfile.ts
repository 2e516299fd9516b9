/**
 * The repository's Dockerfile as the tests that rehearse the image without a Docker engine read
 * it: continuation lines joined, comments and blank lines dropped, one entry per stage (FROM),
 * each with what the rehearsals need of it. The tests take the image's commands, environment
 * and files from here, so the Dockerfile and its rehearsals cannot drift apart.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface Stage {
  /** The base image (`node:24-bookworm-slim`). */
  from: string;
  /** The stage's name (`FROM ... AS name`), or null. */
  name: string | null;
  /** Its ENV instructions' variables. */
  env: Record<string, string>;
  /** CMD, exec form. */
  cmd: string[];
  /** HEALTHCHECK's CMD, exec form. */
  healthcheck: string[];
  user: string | null;
  /** The sources its COPY and ADD take from the build context (not those `--from` a stage). */
  copies: string[];
  /** Each RUN instruction's shell command. */
  runs: string[];
}

/** Splits `K=V K2="v 2"` into pairs. */
function parseEnv(args: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = m[2] ?? "";
    env[m[1] as string] = raw.startsWith('"') ? JSON.parse(raw) : raw;
  }
  return env;
}

/** A COPY or ADD's sources from the build context (`./` and a trailing `/` dropped); none for `--from=`. */
function contextSources(args: string): string[] {
  let rest = args.trim();
  const flags: string[] = [];
  while (rest.startsWith("--")) {
    const [flag = "", more = ""] = rest.split(/\s+(.*)/s);
    flags.push(flag);
    rest = more.trim();
  }
  if (flags.some((f) => f.startsWith("--from="))) return [];
  const parts: string[] = rest.startsWith("[") ? JSON.parse(rest) : rest.split(/\s+/);
  return parts.slice(0, -1).map((s) => s.replace(/^\.\//, "").replace(/\/$/, ""));
}

/** Each stage of a Dockerfile's text, in order. */
export function parseStages(dockerfile: string): Stage[] {
  const lines = dockerfile
    .replace(/\\\r?\n/g, " ")
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, keyword = "", args = ""] = /^(\S+)\s+(.*)$/.exec(line) ?? [];
    const upper = keyword.toUpperCase();
    if (upper === "FROM") {
      const [, from = "", name = null] = /^(\S+)(?:\s+AS\s+(\S+))?/i.exec(args.trim()) ?? [];
      stages.push({ from, name, env: {}, cmd: [], healthcheck: [], user: null, copies: [], runs: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) continue;
    if (upper === "ENV") Object.assign(stage.env, parseEnv(args));
    else if (upper === "CMD") stage.cmd = JSON.parse(args);
    else if (upper === "HEALTHCHECK") stage.healthcheck = JSON.parse(args.slice(args.indexOf("CMD ") + 4));
    else if (upper === "USER") stage.user = args.trim();
    else if (upper === "COPY" || upper === "ADD") stage.copies.push(...contextSources(args));
    else if (upper === "RUN") stage.runs.push(args.trim());
  }
  return stages;
}

/** The stages of the repository's Dockerfile. */
export function dockerfileStages(): Stage[] {
  return parseStages(readFileSync(join(root, "Dockerfile"), "utf8"));
}

/** The commands of a stage's RUN instructions, each RUN split at `&&` and `;`. */
export function runCommands(stage: Stage): string[] {
  return stage.runs.flatMap((run) => run.split(/&&|;/).map((part) => part.trim())).filter((part) => part !== "");
}
