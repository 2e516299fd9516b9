/** The `code` of a Node system error (`ENOENT`, …), or undefined for anything else. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "string") return err.code;
  return undefined;
}

/** Whether `code` says the process (EMFILE) or the system (ENFILE) has no file descriptor left. */
export const isOutOfDescriptors = (code: string | undefined): code is "EMFILE" | "ENFILE" =>
  code === "EMFILE" || code === "ENFILE";
