import { Agent, fetch } from "undici";
import type { ModelFetch } from "./retry-delay-cap.js";

/**
 * The fetch the SDK uses by default: undici's own (newer and measurably cheaper per
 * request than the one built into Node 20), over one keep-alive connection pool.
 */
const dispatcher = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

export const upstreamFetch: ModelFetch = (input, init) =>
  fetch(input as Parameters<typeof fetch>[0], {
    ...(init as Parameters<typeof fetch>[1]),
    dispatcher,
  }) as unknown as Promise<Response>;
