import type { ModelClient } from "../agent/model.js";

/**
 * A client for a server started without model settings: every request answers
 * `MODEL_NOT_CONFIGURED` with `reason` (which should name the variables to set), so the
 * HTTP API stays up and runs fail with an actionable error.
 */
export function notConfiguredModelClient(reason: string): ModelClient {
  return {
    complete: async () => ({
      ok: false,
      code: "MODEL_NOT_CONFIGURED",
      message: reason,
      timing: { latencyMs: 0, firstTokenMs: null },
    }),
  };
}
