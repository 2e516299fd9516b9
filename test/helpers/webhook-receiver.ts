import { createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

/** A signing secret as the server takes it: `whsec_` and 32 bytes in base64. */
export const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;

export interface ReceivedWebhook {
  id: string;
  timestamp: number;
  /** Whether the `v1` signature is the HMAC-SHA256 of `id.timestamp.body` under the secret. */
  signatureValid: boolean;
  // biome-ignore lint/suspicious/noExplicitAny: payloads are inspected freely by tests.
  payload: any;
  answered: number | null;
}

/**
 * A real HTTP receiver on 127.0.0.1 that checks each delivery's Standard Webhooks signature
 * and answers with `answer(delivery, tryNumber)`: a status, or "hang" to never answer.
 */
export async function startWebhookReceiver(
  answer: (delivery: ReceivedWebhook, tryNumber: number) => number | "hang" = () => 200,
  secret = WEBHOOK_SECRET,
) {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const received: ReceivedWebhook[] = [];
  const waiters: (() => void)[] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer(async (req: IncomingMessage, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const id = String(req.headers["webhook-id"]);
    const timestamp = String(req.headers["webhook-timestamp"]);
    const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
    const signatures = String(req.headers["webhook-signature"] ?? "")
      .split(" ")
      .filter((s) => s.startsWith("v1,"))
      .map((s) => Buffer.from(s.slice(3), "base64"));
    const delivery: ReceivedWebhook = {
      id,
      timestamp: Number(timestamp),
      signatureValid: signatures.some((s) => s.length === expected.length && timingSafeEqual(s, expected)),
      payload: JSON.parse(body),
      answered: null,
    };
    const tryNumber = received.filter((r) => r.id === id).length + 1;
    received.push(delivery);
    for (const wake of waiters.splice(0)) wake();
    const status = delivery.signatureValid ? answer(delivery, tryNumber) : 401;
    if (status === "hang") {
      hanging.add(res);
      return;
    }
    delivery.answered = status;
    res.writeHead(status).end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    /** Resolves once a delivery matching `match` has been answered `status` (or received, with no status). */
    async until(match: (delivery: ReceivedWebhook) => boolean, timeoutMs = 10_000): Promise<ReceivedWebhook> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no matching webhook; received ${JSON.stringify(received)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
