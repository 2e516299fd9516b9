import { createInterface } from "node:readline";
import type { Ask } from "./approvals.js";
import type { TerminalKeys } from "./terminal-keys.js";

/**
 * An `Ask` that puts the question on `output` and reads one line of the keys typed after
 * it was shown (`keys`): "y" or "yes" allows, anything else (an empty line, Ctrl-D) denies.
 * A withdrawn question takes its line, half typed or not, with it. Ctrl-C never reaches
 * the question: `TerminalKeys` takes it, and the cancel it starts withdraws the question.
 */
export function terminalAsk({ keys, output }: { keys: TerminalKeys; output: NodeJS.WritableStream }): Ask {
  return (question, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve(null);
      // Shown again (after Ctrl-Z and fg) with what was typed so far.
      const input = keys.open(() => rl.prompt(true));
      const rl = createInterface({ input, output, terminal: true });
      let settled = false;
      const settle = (answer: boolean | null) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", withdraw);
        keys.close(input);
        rl.close();
        resolve(answer);
      };
      const withdraw = () => {
        output.write("\n");
        settle(null);
      };
      signal.addEventListener("abort", withdraw);
      rl.on("close", () => settle(false));
      rl.question(question, (answer) => settle(/^\s*y(es)?\s*$/i.test(answer)));
    });
}
