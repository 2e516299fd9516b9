import { messageOf } from "../message-of.js";
import { commitItem, hintOf, INPUT_WITHDRAWN, type LoopContext, type PhaseStop } from "./loop-context.js";
import { type AgentMessage, wellFormed } from "./messages.js";

/** Input the host holds for a running loop: it becomes a user message with this id. */
export interface PendingInput {
  id: string;
  content: string;
}

/**
 * Asked before each model request (after the turn's tool results, so never between an
 * assistant message with tool calls and its results): the input that joined the run since,
 * oldest first. Each is committed as a user message (its commit carries `inputId`) before the
 * request is made.
 */
export type PendingInputHook = () => Promise<readonly PendingInput[]>;

/**
 * Commits the hook's input as user messages; a hook that throws, or a failed commit, stops the
 * run. Cancelled while the hook read: nothing is committed (the input stays the host's, for a
 * run of its own), and the run stops.
 */
export async function takePendingInput(ctx: LoopContext, hook: PendingInputHook): Promise<PhaseStop | null> {
  let inputs: readonly PendingInput[];
  try {
    inputs = await hook();
  } catch (err) {
    const message = messageOf(err);
    return {
      stopReason: "error",
      error: { code: "PENDING_INPUT_FAILED", message: `could not read input: ${message}` },
      ...hintOf(err),
    };
  }
  if (ctx.signal.aborted) return { stopReason: "aborted" };
  for (const input of inputs) {
    const message: AgentMessage = { id: input.id, role: "user", content: wellFormed(input.content) };
    const stop = await commitItem(ctx, { type: "message", message, inputId: input.id });
    // Withdrawn since it was read (the run its key made takes it: see steerActive): not this run's.
    if (stop === INPUT_WITHDRAWN) continue;
    if (stop) return stop;
    ctx.history.push(message);
  }
  return null;
}
