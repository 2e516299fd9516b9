import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { api, busyPort, startChildServer, startRefused } from "../helpers/child-server.js";
import { createTestPgDatabase } from "../helpers/pg-database.js";
import { tempDir } from "../helpers/temp-dir.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

type ToolEntry = { name: string; sandbox?: string };
const base = { OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("configuration values", () => {
  it("a number must be written in decimal digits (no hex, exponent or sign)", () => {
    for (const value of ["0x10", "1e3", "-1", "12.5", "3000abc"]) {
      expect(() => loadConfig({ ...base, PORT: value }), value).toThrow(/PORT: must be a whole number/);
    }
    expect(loadConfig({ ...base, PORT: " 8080 " }).PORT).toBe(8080);
  });

  it("a timeout a Node timer cannot hold is refused instead of firing at once", () => {
    for (const name of ["APPROVAL_TIMEOUT_MS", "MODEL_REQUEST_TIMEOUT_MS", "MODEL_IDLE_TIMEOUT_MS"]) {
      expect(() => loadConfig({ ...base, [name]: "3000000000" }), name).toThrow(new RegExp(`${name}: .*2147483647`));
      expect(loadConfig({ ...base, [name]: "2147483647" })[name as "APPROVAL_TIMEOUT_MS"]).toBe(2_147_483_647);
    }
  });

  it("RESPONSE_WRITE_TIMEOUT_MS is 30 s unless set, at least 100 ms and at most what a timer holds", () => {
    expect(loadConfig(base).RESPONSE_WRITE_TIMEOUT_MS).toBe(30_000);
    expect(loadConfig({ ...base, RESPONSE_WRITE_TIMEOUT_MS: "100" }).RESPONSE_WRITE_TIMEOUT_MS).toBe(100);
    for (const value of ["99", "0", "3000000000", "30s", "-1"]) {
      expect(() => loadConfig({ ...base, RESPONSE_WRITE_TIMEOUT_MS: value }), value).toThrow(
        /RESPONSE_WRITE_TIMEOUT_MS: /,
      );
    }
  });

  it("RUN_LEASE_MS is at least 300 ms and INSTANCE_ID a plain name; both have defaults", () => {
    expect(loadConfig(base).RUN_LEASE_MS).toBe(30_000);
    expect(loadConfig(base).INSTANCE_ID).toBeUndefined();
    expect(() => loadConfig({ ...base, RUN_LEASE_MS: "100" })).toThrow(/RUN_LEASE_MS/);
    expect(loadConfig({ ...base, INSTANCE_ID: "pod-7.agents_a:1" }).INSTANCE_ID).toBe("pod-7.agents_a:1");
    expect(() => loadConfig({ ...base, INSTANCE_ID: "has space" })).toThrow(/INSTANCE_ID: must be 1-128 letters/);
  });

  it("SHELL_TMP_BYTES is 256 MiB by default, between 1 MiB and 16 GiB, in decimal digits", () => {
    expect(loadConfig(base).SHELL_TMP_BYTES).toBe(256 * 1024 * 1024);
    expect(loadConfig({ ...base, SHELL_TMP_BYTES: "1048576" }).SHELL_TMP_BYTES).toBe(1024 * 1024);
    for (const value of ["1048575", "17179869185", "256M", "-1"]) {
      expect(() => loadConfig({ ...base, SHELL_TMP_BYTES: value }), value).toThrow(/SHELL_TMP_BYTES: /);
    }
  });

  it("SHELL_MAX_PROCESSES is 1024 by default, between 16 and 1,000,000", () => {
    expect(loadConfig(base).SHELL_MAX_PROCESSES).toBe(1024);
    expect(loadConfig({ ...base, SHELL_MAX_PROCESSES: "16" }).SHELL_MAX_PROCESSES).toBe(16);
    for (const value of ["15", "1000001", "1k", "-1"]) {
      expect(() => loadConfig({ ...base, SHELL_MAX_PROCESSES: value }), value).toThrow(/SHELL_MAX_PROCESSES: /);
    }
  });

  it("AGENT_API_KEYS refuses a key a bearer header cannot carry (a space, a character beyond ASCII), naming the rule", () => {
    // Accepted at start, such a key could never authenticate: 401 with the exact key configured.
    for (const key of [
      "tenant passphrase with spaces 42",
      "tenant-key-€-0123456789abcdef",
      "clé-secrète-du-locataire-0123",
    ]) {
      expect(() => loadConfig({ ...base, AGENT_API_KEYS: key }), key).toThrow(/AGENT_API_KEYS.*visible ASCII/);
    }
    const odd = 'tenant"key\\0123456789~!';
    expect(loadConfig({ ...base, AGENT_API_KEYS: `${odd},another-key-0123456789` }).AGENT_API_KEYS).toEqual([
      odd,
      "another-key-0123456789",
    ]);
  });

  it("CORS_ORIGINS takes exact origins or *, and names a value that is not one", () => {
    expect(
      loadConfig({ ...base, CORS_ORIGINS: "https://app.example.com, http://localhost:5173" }).CORS_ORIGINS,
    ).toEqual(["https://app.example.com", "http://localhost:5173"]);
    expect(loadConfig({ ...base, CORS_ORIGINS: "*", AGENT_API_KEYS: "a-key-of-sixteen-chars" }).CORS_ORIGINS).toEqual([
      "*",
    ]);
    // A trailing slash would silently never match a browser's Origin header.
    expect(() => loadConfig({ ...base, CORS_ORIGINS: "https://app.example.com/" })).toThrow(
      /CORS_ORIGINS: "https:\/\/app\.example\.com\/" is not an origin/,
    );
    expect(() => loadConfig({ ...base, CORS_ORIGINS: "app.example.com" })).toThrow(/CORS_ORIGINS/);
  });
});

describe("a server that cannot work refuses to start, exit code 2, naming the variable", () => {
  it("WORKSPACE_ROOT that is a file, DATABASE_PATH that is a directory or under a file", () => {
    const temp = tempDir("config-start-");
    cleanups.push(temp.cleanup);
    writeFileSync(join(temp.path, "a-file"), "x");
    mkdirSync(join(temp.path, "a-dir"));

    const workspace = startRefused(temp.path, { WORKSPACE_ROOT: join(temp.path, "a-file") });
    expect(workspace.status).toBe(2);
    expect(workspace.output).toMatch(/WORKSPACE_ROOT: .*a-file cannot hold workspaces/);
    expect(workspace.output).not.toMatch(/\n\s+at /); // a message, not a stack trace

    const dirAsDb = startRefused(temp.path, { DATABASE_PATH: join(temp.path, "a-dir") });
    expect(dirAsDb.status).toBe(2);
    expect(dirAsDb.output).toMatch(/DATABASE_PATH: cannot use .*a-dir/);

    const underFile = startRefused(temp.path, { DATABASE_PATH: join(temp.path, "a-file", "agent.db") });
    expect(underFile.status).toBe(2);
    expect(underFile.output).toMatch(/DATABASE_PATH: cannot use/);
  });

  it("over PostgreSQL, a WORKSPACE_ROOT that cannot be used is named with the shared volume it must be", async () => {
    const temp = tempDir("config-shared-");
    cleanups.push(temp.cleanup);
    writeFileSync(join(temp.path, "a-file"), "x");
    const database = await createTestPgDatabase();
    try {
      const refused = startRefused(temp.path, {
        DATABASE_URL: database.url,
        WORKSPACE_ROOT: join(temp.path, "a-file"),
      });
      expect(refused.status).toBe(2);
      expect(refused.output).toMatch(/WORKSPACE_ROOT: .*a-file cannot hold workspaces/);
      expect(refused.output).toMatch(/one volume shared by every instance .* at the same path on each/);
    } finally {
      await database.drop();
    }
  });

  it("PORT or METRICS_PORT already in use, HOST that is not an address of this machine", async () => {
    const temp = tempDir("config-listen-");
    cleanups.push(temp.cleanup);
    const { port, close } = await busyPort();
    cleanups.push(close);

    const inUse = startRefused(temp.path, { PORT: String(port) });
    expect(inUse.status).toBe(2);
    expect(inUse.output).toContain(`PORT: ${port} is already in use on 127.0.0.1`);
    const metricsInUse = startRefused(temp.path, { METRICS_PORT: String(port) });
    expect(metricsInUse.status).toBe(2);
    expect(metricsInUse.output).toContain(`METRICS_PORT: ${port} is already in use on 127.0.0.1`);

    const badHost = startRefused(temp.path, { HOST: "not a host!" });
    expect(badHost.status).toBe(2);
    expect(badHost.output).toMatch(/HOST: cannot listen on "not a host!"/);
  });
});

describe("the shell sandbox (SHELL_SANDBOX)", () => {
  it("bwrap required where bwrap cannot work: refused at start, exit 2, naming the variable", () => {
    const temp = tempDir("config-sandbox-");
    cleanups.push(temp.cleanup);
    const refused = startRefused(temp.path, { SHELL_SANDBOX: "bwrap", PATH: join(temp.path, "no-bin") });
    expect(refused.status).toBe(2);
    expect(refused.output).toMatch(/SHELL_SANDBOX: bwrap is required, but bwrap is not installed/);
    expect(refused.output).not.toMatch(/\n\s+at /);
    const bad = startRefused(temp.path, { SHELL_SANDBOX: "yes", SHELL_NETWORK: "true" });
    expect(bad.status).toBe(2);
    expect(bad.output).toMatch(/SHELL_SANDBOX/);
    expect(bad.output).toMatch(/SHELL_NETWORK/);
  });

  it("auto without bwrap: the server starts, warns, and /readyz and GET /tools say the shell is unsandboxed", async () => {
    const temp = tempDir("config-sandbox-auto-");
    cleanups.push(temp.cleanup);
    const child = await startChildServer({
      dir: temp.path,
      upstreamURL: "http://127.0.0.1:9/v1",
      env: { PATH: join(temp.path, "no-bin") },
    });
    cleanups.push(async () => {
      child.process.kill("SIGKILL");
      await child.exited;
    });
    const ready = await api(child.url, "GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.shell).toEqual({ sandbox: "none", network: true, reason: expect.stringContaining("bubblewrap") });
    const tools = (await api(child.url, "GET", "/tools")).body.items as ToolEntry[];
    expect(tools.find((tool) => tool.name === "shell")?.sandbox).toBe("none");
    expect(tools.map((tool) => tool.name)).not.toContain("shell_readonly");
    expect(child.output()).toMatch(/"level":40.*shell commands run unsandboxed/);
  });
});

describe("the workspace root at run time", () => {
  let server: TestServer;
  afterEach(async () => server?.close());

  it("removed while the server runs: readyz and the next session make it again", async () => {
    server = await startTestServer();
    const workspaces = join(server.dir, "workspaces");
    expect((await server.request("POST", "/sessions")).status).toBe(201);
    rmSync(workspaces, { recursive: true, force: true });
    expect((await server.request("POST", "/sessions")).status).toBe(201);
    rmSync(workspaces, { recursive: true, force: true });
    const ready = await server.request("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.checks.workspaces).toEqual({ ok: true });
  });

  it("readyz is 503 naming WORKSPACE_ROOT when the root cannot hold workspaces", async () => {
    server = await startTestServer();
    const workspaces = join(server.dir, "workspaces");
    rmSync(workspaces, { recursive: true, force: true });
    writeFileSync(workspaces, "not a directory");
    const ready = await server.request("GET", "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.checks.workspaces).toMatchObject({
      ok: false,
      message: expect.stringContaining("WORKSPACE_ROOT"),
    });
    rmSync(workspaces);
    expect((await server.request("GET", "/readyz")).status).toBe(200);
  });
});

describe("settings that contradict each other", () => {
  it("WEBHOOK_RETRY_BASE_MS above WEBHOOK_RETRY_MAX_MS is refused naming both; equal is accepted", () => {
    expect(() => loadConfig({ ...base, WEBHOOK_RETRY_BASE_MS: "600000", WEBHOOK_RETRY_MAX_MS: "1000" })).toThrow(
      /WEBHOOK_RETRY_BASE_MS: must not be longer than WEBHOOK_RETRY_MAX_MS \(600000 > 1000\)/,
    );
    // Above the default maximum (1 h) without raising it.
    expect(() => loadConfig({ ...base, WEBHOOK_RETRY_BASE_MS: "7200000" })).toThrow(/WEBHOOK_RETRY_MAX_MS/);
    const equal = loadConfig({ ...base, WEBHOOK_RETRY_BASE_MS: "1000", WEBHOOK_RETRY_MAX_MS: "1000" });
    expect([equal.WEBHOOK_RETRY_BASE_MS, equal.WEBHOOK_RETRY_MAX_MS]).toEqual([1000, 1000]);

    const temp = tempDir("config-conflict-");
    cleanups.push(temp.cleanup);
    const refused = startRefused(temp.path, { WEBHOOK_RETRY_BASE_MS: "600000", WEBHOOK_RETRY_MAX_MS: "1000" });
    expect(refused.status).toBe(2);
    expect(refused.output).toMatch(/WEBHOOK_RETRY_BASE_MS: .*WEBHOOK_RETRY_MAX_MS/);
  });
});
