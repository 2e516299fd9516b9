import { setTimeout as delay } from "node:timers/promises";
import type { AppContext } from "../app-context.js";
import { AppError } from "../errors.js";
import type { StartedRun } from "../runs/run-manager-deps.js";
import type { StartRunRequest } from "../runs/run-service.js";

/**
 * How long a chat start refused as busy waits to see the session's active run cancelled:
 * `useChat`'s `stop()` closes the stream (which cancels the run) and resolves at once, so the
 * next message can reach the server before the closed stream does.
 */
export const STOPPING_GRACE_MS = 1000;
const POLL_MS = 25;

/**
 * Starts a chat's run. When the session is busy with a run being cancelled (a stop just before
 * this message), the new run starts once that one has ended (`ifBusy: interrupt` on a run
 * already cancelling); a run that goes on is refused as busy (409 SESSION_BUSY) as before,
 * after STOPPING_GRACE_MS.
 */
export async function startChatRun(
  ctx: Pick<AppContext, "runs" | "store">,
  request: StartRunRequest,
): Promise<StartedRun> {
  try {
    return await ctx.runs.start(request);
  } catch (err) {
    if (!(err instanceof AppError && err.code === "SESSION_BUSY")) throw err;
    const activeId = (err.details as { runId?: string } | undefined)?.runId;
    if (activeId === undefined) throw err;
    const deadline = Date.now() + STOPPING_GRACE_MS;
    while (Date.now() < deadline) {
      // A cancel stored for the run shows as its status (cancelling) until it has ended.
      const status = (await ctx.store.runs.access(activeId))?.status;
      // That run only: one started since (another message's) is not interrupted, and this start is refused as busy.
      if (status === "cancelling") return ctx.runs.start({ ...request, ifBusy: "interrupt", interrupts: activeId });
      if (status === undefined || status === "finished") return ctx.runs.start(request);
      await delay(POLL_MS);
    }
    throw err;
  }
}
