import { startTcpProxy } from "./tcp-proxy.js";

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
  const proxy = await startTcpProxy(`${parsed.searchParams.get("host")}/.s.PGSQL.5432`);
  return {
    url: `postgres://${parsed.username}@127.0.0.1:${new URL(proxy.url).port}${parsed.pathname}`,
    // A pooled connection runs one batch at a time: held from the matching batch on.
    resetAfterCommit: (request) => proxy.resetAnswerOnceHeld(request, holdsCommitComplete),
    open: () => proxy.open(),
    close: () => proxy.close(),
  };
}
