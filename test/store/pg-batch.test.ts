import type { Socket } from "node:net";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runBatch } from "../../src/store/pg/pg-batch.js";
import { createPgStore } from "../../src/store/pg/pg-store.js";
import { createTestPgDatabase, pipelinedPool, type TestPgDatabase } from "../helpers/pg-database.js";

/** The socket of a pooled client (node-postgres keeps it as `connection.stream`). */
const socketOf = (client: pg.PoolClient): Socket =>
  (client as unknown as { connection: { stream: Socket } }).connection.stream;

describe("a PostgreSQL batch on the wire", () => {
  let database: TestPgDatabase;
  let pool: pg.Pool;
  beforeEach(async () => {
    database = await createTestPgDatabase();
    // As the store's pool: pipelined, here with one connection so that its socket can be watched.
    pool = pipelinedPool(database.url, 1);
    await pool.query("CREATE TABLE t (k TEXT PRIMARY KEY)");
  });
  afterEach(async () => {
    await pool?.end();
    await database?.drop();
  });

  it("goes to the server in one write: BEGIN, every statement and COMMIT", async () => {
    const client = await pool.connect();
    const socket = socketOf(client);
    client.release();
    const writes: number[] = [];
    const write = socket._write.bind(socket);
    const writev = socket._writev?.bind(socket);
    socket._write = (chunk, encoding, callback) => {
      writes.push(1);
      write(chunk, encoding, callback);
    };
    socket._writev = (chunks, callback) => {
      writes.push(chunks.length);
      writev?.(chunks, callback);
    };
    const statements = ["a", "b", "c"].map((k) => ({ text: "INSERT INTO t (k) VALUES ($1)", values: [k] }));
    await runBatch(pool, statements);
    expect(writes).toHaveLength(1);
    expect((await pool.query("SELECT k FROM t ORDER BY k")).rows.map((r) => r.k)).toEqual(["a", "b", "c"]);
    // A failing batch is still all or nothing, its failure thrown.
    await expect(runBatch(pool, [{ text: "INSERT INTO t (k) VALUES ('d')" }, ...statements])).rejects.toThrow(
      /duplicate/,
    );
    expect((await pool.query("SELECT count(*)::int AS n FROM t")).rows[0].n).toBe(3);
  });
});

it("the store refuses a pool whose connections do not pipeline: a batch queries a connection before its last query answered", async () => {
  const plain = new pg.Pool({ connectionString: "postgres://127.0.0.1:1/none", max: 1 });
  try {
    expect(() => createPgStore(plain)).toThrow(new TypeError("createPgStore needs a pool created with pipeline: true"));
  } finally {
    await plain.end();
  }
});
