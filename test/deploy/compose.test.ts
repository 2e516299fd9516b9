import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../../src/config.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const deploy = join(root, "deploy");

interface Service {
  build?: string;
  image?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  stop_grace_period?: string;
}

/** An nginx time (`30s`, `1m`, `500ms`, a bare number of seconds) in milliseconds. */
function nginxMs(time: string): number {
  const [, amount, unit = "s"] = /^(\d+)(ms|s|m|h)?$/.exec(time) ?? [];
  if (amount === undefined) throw new Error(`not an nginx time: ${time}`);
  return Number(amount) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as "ms" | "s" | "m" | "h"];
}

/** An nginx size (`2m`, `512k`, `1g`, a bare number of bytes) in bytes; 0 is no limit. */
function nginxBytes(size: string): number {
  const [, amount, unit = ""] = /^(\d+)([kKmMgG]?)$/.exec(size) ?? [];
  if (amount === undefined) throw new Error(`not an nginx size: ${size}`);
  const bytes = Number(amount) * { "": 1, k: 1024, m: 1_048_576, g: 1_073_741_824 }[unit.toLowerCase() as "" | "k"];
  return bytes === 0 ? Number.POSITIVE_INFINITY : bytes;
}

/** What `${NAME:?message}` and `${NAME:-default}` become with these values set. */
const substitute = (value: string, vars: Record<string, string>) =>
  value.replace(/\$\{(\w+)(?::[?-][^}]*)?\}/g, (_, name: string) => vars[name] ?? "");

// No Docker engine runs here: the example is checked for what it must say, and each
// instance's environment is loaded by the server's own configuration schema.
describe("the docker compose example of several instances (deploy/compose.yaml)", () => {
  const compose = parse(readFileSync(join(deploy, "compose.yaml"), "utf8"), { merge: true }) as {
    services: Record<string, Service>;
  };
  const agents = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);
  const vars = { POSTGRES_PASSWORD: "pw", AGENT_API_KEYS: "k".repeat(24), OPENAI_API_KEY: "sk-x" };
  /** An instance's configuration, as the server loads it from the service's environment. */
  const configOf = (service: Service) =>
    loadConfig(
      Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, substitute(String(v), vars)])),
    );

  it("runs three instances of the image built from the repository, each a valid configuration", () => {
    expect(agents.map(([name]) => name)).toEqual(["agent-1", "agent-2", "agent-3"]);
    for (const [, service] of agents) {
      expect(existsSync(join(deploy, service.build as string, "Dockerfile"))).toBe(true);
      const config = configOf(service);
      expect(config.DATABASE_URL).toMatch(/^postgres:\/\/agent:pw@postgres:5432\/agent$/);
      expect(config.AGENT_API_KEYS).toEqual([vars.AGENT_API_KEYS]);
    }
  });

  it("the instances share the database and the workspace volume, each with its own INSTANCE_ID", () => {
    const envs = agents.map(([, s]) => s.environment ?? {});
    expect(new Set(envs.map((e) => e.DATABASE_URL)).size).toBe(1);
    expect(new Set(envs.map((e) => e.INSTANCE_ID)).size).toBe(3);
    for (const [, service] of agents) {
      const root = service.environment?.WORKSPACE_ROOT;
      expect(service.volumes).toContain(`workspaces:${root}`);
      // Long enough for SHUTDOWN_GRACE_MS plus the 2 s the server takes at most after it.
      expect(Number.parseInt(service.stop_grace_period ?? "10", 10)).toBeGreaterThanOrEqual(7);
    }
  });

  it("the load balancer passes Server-Sent Events through unbuffered, with long read timeouts, to every instance", () => {
    const lb = compose.services.lb as Service;
    expect(lb.volumes?.some((v) => v.startsWith("./nginx.conf:"))).toBe(true);
    const nginx = readFileSync(join(deploy, "nginx.conf"), "utf8");
    expect(nginx).toMatch(/proxy_buffering off;/);
    expect(nginx).toMatch(/proxy_http_version 1\.1;/);
    const timeout = /proxy_read_timeout (\d+)(h|m|s);/.exec(nginx);
    const seconds = Number(timeout?.[1]) * { h: 3600, m: 60, s: 1 }[timeout?.[2] as "h" | "m" | "s"];
    // Far above the 15 s heartbeat of a quiet stream.
    expect(seconds).toBeGreaterThanOrEqual(300);
    const upstreams = [...nginx.matchAll(/server (agent-\d):3000;/g)].map((m) => m[1]);
    expect(upstreams).toEqual(agents.map(([name]) => name));
  });

  it("nginx lets an idle upstream connection go before the instance closes it (no 502 from a reused, closing one)", () => {
    const nginx = readFileSync(join(deploy, "nginx.conf"), "utf8");
    const upstream = /upstream agents \{([^}]*)\}/.exec(nginx)?.[1] ?? "";
    expect(upstream).toMatch(/keepalive \d+;/);
    // nginx keeps an idle upstream connection 60 s unless the upstream block says otherwise.
    const idle = nginxMs(/keepalive_timeout (\w+);/.exec(upstream)?.[1] ?? "60s");
    for (const [name, service] of agents) {
      expect(idle, name).toBeLessThan(configOf(service).KEEP_ALIVE_TIMEOUT_MS);
    }
  });

  // A useChat client answers an approval by posting the assistant message back, with every tool
  // output of its run so far (README, CHAT_BODY_LIMIT_BYTES): a few MiB once the run has read
  // some files. nginx answers a body over its limit with its own HTML 413, and the approval is
  // never recorded; the instance, not nginx, must decide (its JSON 413 names the setting).
  it("nginx lets through every request body an instance accepts (a useChat approval's, up to CHAT_BODY_LIMIT_BYTES)", () => {
    const nginx = readFileSync(join(deploy, "nginx.conf"), "utf8").replace(/#.*$/gm, "");
    const sizes = [...nginx.matchAll(/client_max_body_size\s+(\w+)\s*;/g)].map((m) => nginxBytes(m[1] as string));
    // The smallest one in force anywhere on the way to the instances (nginx's default: 1m).
    const limit = Math.min(...(sizes.length === 0 ? [nginxBytes("1m")] : sizes));
    for (const [name, service] of agents) {
      const config = configOf(service);
      const accepted = Math.max(config.CHAT_BODY_LIMIT_BYTES, config.BODY_LIMIT_BYTES);
      expect(
        limit,
        `${name} accepts bodies up to ${accepted} bytes; nginx passes at most ${limit}`,
      ).toBeGreaterThanOrEqual(accepted);
    }
  });
});
