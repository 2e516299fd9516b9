import { connect, createServer, type Socket } from "node:net";

export interface TcpProxy {
  url: string;
  /** The heads of the HTTP requests the clients sent (text up to the blank line), by connection. */
  heads(): string[];
  /** Breaks every open connection, both sides. */
  dropAll(): void;
  /** Stops passing the server's bytes to the clients (the connections stay open). */
  stall(): void;
  /**
   * The next request whose bytes match `request` reaches the server, but its answer does not
   * reach the client: the client's connection is reset (RST) when the first byte of it comes.
   */
  resetAnswerTo(request: RegExp): void;
  /**
   * The next request whose bytes match `request` reaches the server, and the server's answers
   * on that connection are held from then on (the connection was idle before it) until `until`
   * says the bytes held are enough (e.g. the server has carried out a COMMIT): then the client's
   * connection is reset (RST) without any of them. Resolves when that happened.
   */
  resetAnswerOnceHeld(request: RegExp, until: (held: Buffer) => boolean): Promise<void>;
  /** Client connections open now. */
  open(): number;
  /**
   * Silently drops every byte, both ways, of the connections open now (no FIN, no RST: they
   * go quiet, as after a failover behind a virtual IP); new connections pass as before.
   */
  blackhole(): void;
  /** New connections go to this port from now on (a server restarted elsewhere). */
  retarget(port: number): void;
  /** Drops every connection and refuses new ones, as a server that is down. */
  goDown(): Promise<void>;
  /** Takes connections again, on the same port. */
  comeBack(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP proxy on 127.0.0.1 in front of `target` (a port on 127.0.0.1, or a Unix socket's
 * path), to break, stall or silence a client's connections.
 */
export async function startTcpProxy(target: number | string): Promise<TcpProxy> {
  let targetPort = target;
  const pairs = new Set<[Socket, Socket]>();
  const silenced = new WeakSet<Socket>();
  const sent: string[] = [];
  let stalled = false;
  let armed: { request: RegExp; until: (held: Buffer) => boolean; done: () => void } | null = null;
  const server = createServer((client) => {
    const upstream = typeof targetPort === "string" ? connect({ path: targetPort }) : connect(targetPort, "127.0.0.1");
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const index = sent.push("") - 1;
    // Armed and matched: the server's answers held from the request on, until the reset.
    let held: { bytes: Buffer; until: (held: Buffer) => boolean; done: () => void } | null = null;
    client.on("data", (data) => {
      if (silenced.has(client)) return;
      sent[index] += data.toString("latin1");
      if (armed && held === null && armed.request.test(data.toString("latin1"))) {
        held = { bytes: Buffer.alloc(0), until: armed.until, done: armed.done };
        armed = null;
      }
      upstream.write(data);
    });
    upstream.on("data", (data) => {
      if (held === null) {
        if (!stalled && !silenced.has(client)) client.write(data);
        return;
      }
      held.bytes = Buffer.concat([held.bytes, data]);
      if (held.until(held.bytes)) {
        client.resetAndDestroy();
        upstream.destroy();
        held.done();
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
  const proxy: TcpProxy = {
    url: `http://127.0.0.1:${port}`,
    heads: () =>
      sent
        .flatMap((text) => [...text.matchAll(/((?:GET|POST|DELETE|PUT) \/\S* HTTP\/1\.1\r\n[\s\S]*?\r\n)\r\n/g)])
        .map((m) => m[1] as string),
    dropAll() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
    },
    stall() {
      stalled = true;
    },
    resetAnswerTo(request) {
      void proxy.resetAnswerOnceHeld(request, () => true);
    },
    resetAnswerOnceHeld(request, until) {
      return new Promise<void>((done) => {
        armed = { request, until, done };
      });
    },
    open: () => pairs.size,
    blackhole() {
      for (const [client] of pairs) silenced.add(client);
    },
    retarget(port) {
      targetPort = port;
    },
    async goDown() {
      proxy.dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async comeBack() {
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    },
    async close() {
      proxy.dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
