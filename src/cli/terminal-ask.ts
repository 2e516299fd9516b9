import { createInterface } from "node:readline";
import type { Ask } from "./approvals.js";

/**
 * An `Ask` that puts the question on `output` and reads one line from `input` (a
 * terminal): "y" or "yes" allows, anything else (an empty line, end of input) denies.
 * Ctrl-C while asking calls `onInterrupt` (the terminal is in raw mode then, so no SIGINT
 * reaches the process) and withdraws the question.
 */
export function terminalAsk({
  input,
  output,
  onInterrupt,
}: {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  onInterrupt: () => void;
}): Ask {
  return (question, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve(null);
      const rl = createInterface({ input, output, terminal: true });
      let settled = false;
      const settle = (answer: boolean | null) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", withdraw);
        rl.close();
        resolve(answer);
      };
      const withdraw = () => {
        output.write("\n");
        settle(null);
      };
      signal.addEventListener("abort", withdraw);
      rl.on("SIGINT", () => {
        output.write("\n");
        settle(null);
        onInterrupt();
      });
      rl.on("close", () => settle(false));
      rl.question(question, (answer) => settle(/^\s*y(es)?\s*$/i.test(answer)));
    });
}
