import { AppError } from "../errors.js";

/**
 * The prototype key of `text` that Fastify's JSON parser refuses (prototype poisoning): a key
 * named `__proto__`, or a `constructor` object with a `prototype` key, at any depth; null when
 * it has none or is not JSON at all. Meant for a body the parser refused: it parses `text` again.
 */
export function prototypeKeyIn(text: string): "__proto__" | "constructor.prototype" | null {
  let found: "__proto__" | "constructor.prototype" | null = null;
  try {
    JSON.parse(text, (key, value: unknown) => {
      if (key === "__proto__") found ??= "__proto__";
      else if (
        key === "constructor" &&
        typeof value === "object" &&
        value !== null &&
        Object.hasOwn(value, "prototype")
      )
        found ??= "constructor.prototype";
      return value;
    });
  } catch {
    return null;
  }
  return found;
}

/** 400 INVALID_BODY for a valid JSON body holding `key` (see prototypeKeyIn). */
export const prototypeKeyRefused = (key: "__proto__" | "constructor.prototype"): AppError =>
  new AppError(
    "INVALID_BODY",
    key === "__proto__"
      ? "the JSON body has a key named __proto__, which is not accepted (at any depth)"
      : 'the JSON body has a "constructor" object with a "prototype" key (constructor.prototype), which is not accepted (at any depth)',
    400,
  );
