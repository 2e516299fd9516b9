import { relative, sep } from "node:path";

/** True when `p` is `root` or below it (both absolute and normalised). */
export function isInside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** `abs` relative to the workspace root, with `/` separators; "." for the root itself. */
export function workspaceRelative(root: string, abs: string): string {
  const rel = relative(root, abs);
  return rel === "" ? "." : rel.split(sep).join("/");
}
