import { connect, createServer, type Socket } from "node:net";

/**
 * A TCP proxy in front of a PostgreSQL server (a Unix socket's path), which understands just
 * enough of the wire protocol to lose the answer of a COMMIT the server carried out.
 */
export interface PgFaultProxy {
  /** A postgres:// URL through the proxy (same user and database as `databaseUrl`). */
  url: string;
  /**
   * The next batch whose client bytes match `request` reaches the server and is carried out;
   * once the server has answered its COMMIT (CommandComplete "COMMIT"), the client's
   * connection is reset (RST) instead of getting any of the answers. Resolves when that happened.
   */
  resetAfterCommit(request: RegExp): Promise<void>;
  /** Client connections open now. */
  open(): number;
  close(): Promise<void>;
}

/** Whether `data` (server→client bytes, from a message boundary) holds CommandComplete "COMMIT". */
function holdsCommitComplete(data: Buffer): boolean {
  let at = 0;
  while (at + 5 <= data.length) {
    const type = data[at];
    const length = data.readUInt32BE(at + 1);
    if (at + 1 + length > data.length) return false;
    if (type === 0x43 && data.subarray(at + 5, at + 1 + length).toString("latin1") === "COMMIT\0") return true;
    at += 1 + length;
  }
  return false;
}

export async function startPgFaultProxy(databaseUrl: string): Promise<PgFaultProxy> {
  const parsed = new URL(databaseUrl);
  const socketPath = `${parsed.searchParams.get("host")}/.s.PGSQL.5432`;
  const pairs = new Set<[Socket, Socket]>();
  let armed: { request: RegExp; done: () => void } | null = null;
  const server = createServer((client) => {
    const upstream = connect({ path: socketPath });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    // Once armed and matched: the server's answers are held from the batch on (the connection
    // was idle before it: a pooled connection runs one batch at a time).
    let held: Buffer | null = null;
    let onCommit: (() => void) | null = null;
    client.on("data", (data) => {
      if (armed && held === null && armed.request.test(data.toString("latin1"))) {
        held = Buffer.alloc(0);
        onCommit = armed.done;
        armed = null;
      }
      upstream.write(data);
    });
    upstream.on("data", (data) => {
      if (held === null) {
        client.write(data);
        return;
      }
      held = Buffer.concat([held, data]);
      if (holdsCommitComplete(held)) {
        client.resetAndDestroy();
        upstream.destroy();
        onCommit?.();
      }
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of pair) {
      socket.on("error", end);
      socket.on("close", end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `postgres://${parsed.username}@127.0.0.1:${port}${parsed.pathname}`,
    resetAfterCommit(request) {
      return new Promise<void>((resolve) => {
        armed = { request, done: resolve };
      });
    },
    open: () => pairs.size,
    async close() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
