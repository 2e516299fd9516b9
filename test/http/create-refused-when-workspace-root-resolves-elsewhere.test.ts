/**
 * WORKSPACE_ROOT replaced at runtime (a volume moved and linked back at its path, or a
 * symlinked root re-pointed). The tools stay pinned to the root's real path found at start, so
 * a create whose root now resolves elsewhere is refused (503 WORKSPACE_ROOT_MOVED, as the spec
 * documents), making no directory anywhere, and /readyz says why, until the root leads back
 * to where it was (or the server is restarted).
 */
import { mkdirSync, readdirSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { call } from "../contract/support.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The entries under `dir`, recursively, as relative paths. */
const entries = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();

/** POST /sessions, its answer checked against openapi.yaml. */
async function create(s: TestServer, body: object) {
  const created = await call(s, "POST", "/sessions", { body });
  return { status: created.status, code: created.body?.error?.code ?? null };
}

/** The workspaces check of /readyz (a server without API keys tells its message). */
async function workspacesCheck(s: TestServer) {
  const ready = await s.request("GET", "/readyz");
  return { status: ready.status, workspaces: ready.body.checks.workspaces };
}

const refused = { status: 503, code: "WORKSPACE_ROOT_MOVED" };
const notReady = {
  status: 503,
  workspaces: { ok: false, message: expect.stringMatching(/WORKSPACE_ROOT .*restart/) },
};

describe("WORKSPACE_ROOT replaced while the server runs", () => {
  it("moved and linked back: a create is refused with 503 WORKSPACE_ROOT_MOVED, makes nothing, and /readyz says why", async () => {
    server = await startTestServer();
    const root = join(server.dir, "workspaces");
    const moved = join(server.dir, "moved-volume");
    expect((await server.request("POST", "/sessions", { body: {} })).status).toBe(201);
    renameSync(root, moved);
    symlinkSync(moved, root);
    const before = entries(moved);

    expect(await create(server, {})).toEqual(refused);
    expect(entries(moved)).toEqual(before);
    expect(await workspacesCheck(server)).toEqual(notReady);
  });

  it("a create naming a shared workspace is answered like one without (503), not 500 INTERNAL, and makes nothing", async () => {
    server = await startTestServer();
    const root = join(server.dir, "workspaces");
    const moved = join(server.dir, "moved-volume");
    expect((await server.request("POST", "/sessions", { body: {} })).status).toBe(201);
    renameSync(root, moved);
    symlinkSync(moved, root);
    const before = entries(moved);

    const own = await create(server, {});
    const shared = await create(server, { workspace: "team" });
    expect({ own, shared }).toEqual({ own: refused, shared: refused });
    expect(entries(moved)).toEqual(before);
  });

  it("a symlinked root re-pointed: creates are refused, nothing is made in either volume; pointed back, they succeed", async () => {
    const temp = join(process.env.TMPDIR ?? "/tmp", `ws-root-${process.pid}-${Date.now()}`);
    const [a, b] = [join(temp, "volume-a"), join(temp, "volume-b")];
    mkdirSync(a, { recursive: true });
    mkdirSync(b, { recursive: true });
    const link = join(temp, "workspaces");
    symlinkSync(a, link);
    try {
      server = await startTestServer({ env: { WORKSPACE_ROOT: link } });
      expect((await server.request("POST", "/sessions", { body: {} })).status).toBe(201);
      const inA = entries(a);
      // The operator points the root at another volume.
      rmSync(link);
      symlinkSync(b, link);
      expect(await create(server, {})).toEqual(refused);
      expect(await create(server, { workspace: "team" })).toEqual(refused);
      expect({ a: entries(a), b: entries(b) }).toEqual({ a: inA, b: [] });
      expect(await workspacesCheck(server)).toEqual(notReady);

      // Pointed back at the volume of the start: the server is whole again.
      rmSync(link);
      symlinkSync(a, link);
      expect(await create(server, {})).toEqual({ status: 201, code: null });
      expect(await workspacesCheck(server)).toEqual({ status: 200, workspaces: { ok: true } });
    } finally {
      await server?.close();
      server = undefined;
      rmSync(temp, { recursive: true, force: true });
    }
  });
});
