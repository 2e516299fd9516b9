import type { FastifyInstance } from "fastify";
import { Deadline } from "../deadline.js";

declare module "fastify" {
  interface FastifyInstance {
    /**
     * Closes the app as `close()` does, its closing stages (the open streams' end, the answers
     * under way, the webhook sends, the last trace export) waiting no later than `deadline`.
     */
    closeBy(deadline: Deadline): Promise<void>;
  }
}

/**
 * Gives `app` closeBy(deadline), and returns what its closing hooks ask for the deadline they
 * share: the one given to closeBy, or Deadline.NONE when the app is closed by `close()` alone
 * (each stage then takes its own cap).
 */
export function closeByDeadline(app: FastifyInstance): () => Deadline {
  let closing = Deadline.NONE;
  app.decorate("closeBy", async (deadline: Deadline) => {
    closing = deadline;
    await app.close();
  });
  return () => closing;
}
