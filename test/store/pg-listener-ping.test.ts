/**
 * The listening connection gone quiet without being closed (a failover behind a virtual IP: no
 * FIN, no RST; new connections work): notifications stopped for good, and keepalive probes,
 * answered by whatever still holds the old path (here the proxy), never told. The listener now
 * pings its connection and replaces one that does not answer, then resyncs its subscribers.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { PgListener } from "../../src/store/pg/pg-listener.js";
import { createTestPgDatabase, type TestPgDatabase } from "../helpers/pg-database.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { until } from "../helpers/until.js";

let database: TestPgDatabase;
let proxy: TcpProxy;
let viaProxy: string;
beforeAll(async () => {
  database = await createTestPgDatabase();
  const url = new URL(database.url);
  proxy = await startTcpProxy(`${url.searchParams.get("host")}/.s.PGSQL.5432`);
  viaProxy = `postgres://${url.username}@127.0.0.1:${new URL(proxy.url).port}${url.pathname}`;
});
afterAll(async () => {
  await proxy?.close();
  await database?.drop();
});

it("a listening connection that went quiet is replaced within two pings, and the subscribers resync", async () => {
  const listener = new PgListener({ connection: { connectionString: viaProxy }, pingMs: 300 });
  let resyncs = 0;
  const unsubscribe = listener.subscribe({ resync: () => resyncs++ });
  try {
    await until(
      async () => resyncs,
      (n) => n === 1,
      "the first LISTEN",
    );
    proxy.blackhole();
    const since = performance.now();
    await until(
      async () => resyncs,
      (n) => n === 2,
      "a new listening connection",
    );
    expect(listener.connected).toBe(true);
    expect(performance.now() - since).toBeLessThan(5_000);
  } finally {
    unsubscribe();
    await listener.close();
  }
});
