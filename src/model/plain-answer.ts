import { APIError } from "openai";
import { isRecord } from "./chunk-fields.js";
import type { ModelFailure } from "./classify-error.js";
import { MAX_ERROR_BODY_BYTES } from "./error-body.js";

/**
 * The first bytes of a body, kept until it proves to be an event stream: a body that brought
 * no event at all is read as a plain JSON answer (see {@link plainAnswerFailure}). At most
 * MAX_ERROR_BODY_BYTES are kept.
 */
export class BodyHead {
  #parts: Buffer[] = [];
  #bytes = 0;

  add(chunk: Uint8Array): void {
    const room = MAX_ERROR_BODY_BYTES - this.#bytes;
    if (room <= 0) return;
    const piece = Buffer.from(chunk.subarray(0, room));
    this.#parts.push(piece);
    this.#bytes += piece.byteLength;
  }

  text(): string {
    return Buffer.concat(this.#parts).toString("utf8");
  }
}

/**
 * Why a successful answer that was not an event stream fails the turn, when its body says:
 * an `{"error": ...}` object (gateways answer a failed request so, with status 200) is thrown
 * as the {@link APIError} it is, so the upstream's own message is reported; a whole
 * `chat.completion` means the upstream ignored `stream: true`. Null when the body is neither
 * (or is not JSON, or was longer than MAX_ERROR_BODY_BYTES).
 */
export function plainAnswerFailure(body: string, headers: Headers): ModelFailure | null {
  let answer: unknown;
  try {
    answer = JSON.parse(body);
  } catch {
    return null;
  }
  if (!isRecord(answer)) return null;
  if (answer.error !== undefined && answer.error !== null) {
    throw new APIError(200, isRecord(answer.error) ? answer.error : answer, undefined, headers);
  }
  if (answer.object === "chat.completion" || Array.isArray(answer.choices)) {
    return {
      code: "MODEL_BAD_RESPONSE",
      message:
        "the upstream answered with a whole chat.completion instead of an event stream: it ignored `stream: true`, which this server needs",
    };
  }
  return null;
}
