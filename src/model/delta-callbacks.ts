/** Wraps an exception thrown by the caller's `onTextDelta`, so it is rethrown rather than classified. */
export class CallbackError extends Error {}

/** `callback`, its exceptions wrapped in CallbackError. */
export function rethrown(callback: ((text: string) => void) | undefined): ((text: string) => void) | undefined {
  if (!callback) return undefined;
  return (text) => {
    try {
      callback(text);
    } catch (error) {
      throw new CallbackError("a delta callback threw", { cause: error });
    }
  };
}
