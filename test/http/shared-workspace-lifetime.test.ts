/**
 * A shared workspace (`workspace` on POST /sessions) lives as long as a session names it. It
 * used to be kept for ever, so a key creating and deleting sessions, each with a new name, left
 * a directory (and all its files) per name, however low MAX_SESSIONS_PER_KEY. Now the delete of
 * the last session naming it removes it, and a create naming it that races that removal (over
 * either store) still ends with its session's directory in place.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import type { BackendName } from "../helpers/store-backends.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";
import { until } from "../helpers/until.js";

const KEY = "k".repeat(32);
const headers = { authorization: `Bearer ${KEY}` };

describe.each<BackendName>(["sqlite", "postgres"])("shared workspaces over %s", (backend) => {
  let server: TestServer;
  /**
   * What to do at the next questions the store is asked whether a shared workspace is in use
   * (one item a question, in order): run `racer` before the answer is read, or after.
   */
  const atInUse: { racer: () => Promise<void>; beforeAnswer: boolean }[] = [];
  /** Waited for by the next session insert, before it is sent to the store. */
  let beforeInsert: Promise<void> | null = null;
  const hooked = (store: Store): Store => {
    const insert = store.sessions.insert.bind(store.sessions);
    store.sessions.insert = async (session, limit) => {
      const waited = beforeInsert;
      beforeInsert = null;
      await waited;
      return insert(session, limit);
    };
    const inUse = store.sessions.sharedWorkspaceInUse.bind(store.sessions);
    store.sessions.sharedWorkspaceInUse = async (workspace) => {
      const hook = atInUse.shift();
      if (hook?.beforeAnswer) await hook.racer();
      const answer = await inUse(workspace);
      if (hook && !hook.beforeAnswer) await hook.racer();
      return answer;
    };
    return store;
  };
  beforeAll(async () => {
    server = await startTestServer({
      backend,
      env: { AGENT_API_KEYS: KEY, MAX_SESSIONS_PER_KEY: "2" },
      wrapStore: hooked,
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const create = async (workspace: string): Promise<string> => {
    const created = await server.request("POST", "/sessions", { body: { workspace }, headers });
    expect(created.status).toBe(201);
    return created.body.id;
  };
  const remove = async (id: string) =>
    expect((await server.request("DELETE", `/sessions/${id}`, { headers })).status).toBe(204);
  const pathOf = async (id: string) => {
    const record = await server.ctx.store.sessions.get(id);
    if (!record) throw new Error(`session ${id} is not stored`);
    return server.ctx.sessions.workspacePath(record);
  };
  const sharedLeft = () => readdirSync(join(server.dir, "workspaces", "_shared"));

  it("do not outnumber MAX_SESSIONS_PER_KEY once their sessions are deleted", async () => {
    for (let i = 0; i < 20; i++) await remove(await create(`w${i}`));
    const listed = await server.request("GET", "/sessions", { headers });
    expect({ sessions: listed.body.items.length, sharedDirectoriesLeft: sharedLeft().length }).toEqual({
      sessions: 0,
      sharedDirectoriesLeft: 0,
    });
  });

  it("are kept, with their files, while another session names them, and removed with the last one", async () => {
    const first = await create("team");
    const second = await create("team");
    const path = await pathOf(first);
    writeFileSync(join(path, "notes.txt"), "kept");
    await remove(first);
    expect(readFileSync(join(path, "notes.txt"), "utf8")).toBe("kept");
    await remove(second);
    expect({ exists: existsSync(path), left: sharedLeft() }).toEqual({ exists: false, left: [] });
  });

  it("a create stored between the delete's two looks (before the directory is moved aside) keeps its directory and files", async () => {
    const last = await create("race-a");
    const path = await pathOf(last);
    let racer = "";
    atInUse.push({
      beforeAnswer: false,
      racer: async () => {
        racer = await create("race-a");
        writeFileSync(join(path, "racer.txt"), "mine");
      },
    });
    await remove(last);
    expect(readFileSync(join(await pathOf(racer), "racer.txt"), "utf8")).toBe("mine");
    expect(sharedLeft()).toEqual([expect.stringMatching(/race-a$/)]);
    await remove(racer);
    expect(sharedLeft()).toEqual([]);
  });

  it.each([true, false])(
    "a create stored while the directory is moved aside finds its directory in place (stored before the second look: %s)",
    async (beforeAnswer) => {
      const last = await create("race-b");
      let racer = "";
      atInUse.push({ beforeAnswer: false, racer: async () => {} });
      atInUse.push({
        beforeAnswer,
        racer: async () => {
          racer = await create("race-b");
        },
      });
      await remove(last);
      expect(existsSync(await pathOf(racer))).toBe(true);
      expect(sharedLeft()).toEqual([expect.stringMatching(/race-b$/)]);
      await remove(racer);
      expect(sharedLeft()).toEqual([]);
    },
  );

  it("a create whose directory was made before the removal, and its session stored after, has its directory made again", async () => {
    const last = await create("race-c");
    let release = () => {};
    beforeInsert = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The racer's directory exists (it is the one the delete is about to remove); its insert waits.
    const racing = create("race-c");
    // (An object: a promise read would be waited for.)
    await until(
      () => ({ pending: beforeInsert }),
      ({ pending }) => pending === null,
      "the racer's insert to wait",
    );
    await remove(last);
    expect(sharedLeft()).toEqual([]);
    release();
    const racer = await racing;
    expect(existsSync(await pathOf(racer))).toBe(true);
    await remove(racer);
    expect(sharedLeft()).toEqual([]);
  });
});
