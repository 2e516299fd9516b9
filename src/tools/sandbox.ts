import { spawnSync } from "node:child_process";
import { accessSync, closeSync, constants, lstatSync, openSync, readlinkSync } from "node:fs";
import { delimiter, resolve } from "node:path";

/**
 * How the shell tools run a command: inside a bubblewrap sandbox, or (`none`) as the server's
 * user with its file-system and network access. `reason` says why there is no sandbox.
 * `tmpBytes` is the size of each writable in-memory file system of the sandbox (/tmp, /dev/shm);
 * `maxProcesses` how many processes (threads included) a command may have at once.
 */
export type ShellSandbox =
  | { kind: "bwrap"; bwrap: string; network: boolean; tmpBytes: number; maxProcesses: number; options: BwrapOptions }
  | { kind: "none"; reason: string };

/**
 * What the configuration sets of a sandbox: `network` (SHELL_NETWORK), `tmpBytes`
 * (SHELL_TMP_BYTES), `maxProcesses` (SHELL_MAX_PROCESSES).
 */
export interface SandboxSettings {
  network: boolean;
  tmpBytes: number;
  maxProcesses: number;
}

/** What this bwrap supports beyond the basics (bubblewrap 0.8 forbids nested user namespaces). */
export interface BwrapOptions {
  disableUserns: boolean;
}

export type ShellSandboxMode = "auto" | "bwrap" | "off";

export const UNSANDBOXED: ShellSandbox = { kind: "none", reason: "SHELL_SANDBOX=off" };

/** The descriptor (in the child) of the workspace directory the sandbox mounts. */
export const WORKSPACE_FD = 3;

/** Top-level directories of the system shown read-only (as the links they are on a merged-/usr system). */
const SYSTEM_ROOTS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/**
 * What of /etc programs need: the loader's cache, users and groups, time zone, name resolution,
 * certificates. Never a whole directory that may hold secrets: of /etc/ssl only the certificates
 * and OpenSSL's configuration (its `private/` holds the host's keys, which the sandbox's root
 * reads when the server runs as root); no `shadow`, no SSH or TLS keys.
 */
const ETC_ENTRIES = [
  "/etc/alternatives",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/localtime",
  "/etc/hosts",
  "/etc/resolv.conf",
  "/etc/ssl/certs",
  "/etc/ssl/cert.pem",
  "/etc/ssl/openssl.cnf",
  "/etc/ca-certificates",
  "/etc/os-release",
];

/** The read-only view of the system, as bwrap arguments: /usr, the top-level links or directories, /etc essentials. */
function systemViewArgs(): string[] {
  const args = ["--ro-bind", "/usr", "/usr"];
  for (const path of SYSTEM_ROOTS) {
    try {
      const info = lstatSync(path);
      if (info.isSymbolicLink()) args.push("--symlink", readlinkSync(path), path);
      else if (info.isDirectory()) args.push("--ro-bind", path, path);
    } catch {
      // not on this system
    }
  }
  for (const path of ETC_ENTRIES) args.push("--ro-bind-try", path, path);
  return args;
}

/**
 * The bwrap command line that runs `/bin/sh -c command` in `workspace`: its own user, mount,
 * pid, ipc, uts, cgroup and (unless `network`) network namespaces, no capabilities, no further user namespaces (where this bwrap can
 * forbid them); the system read-only, a fresh /proc (its own processes only; the kernel's
 * settings in /proc/sys read-only), a read-only
 * /dev, an empty private /dev/shm and /tmp; the workspace, passed open as WORKSPACE_FD (so exactly
 * the directory the server checked), at its own path, read-only when `readOnly`. Nothing else
 * of the host is visible. A tmpfs's pages are host memory that belongs to no process (the OOM
 * killer would kill the server for them), so the only writable tmpfs are /tmp and /dev/shm,
 * each of at most `tmpBytes`; bwrap's root and /dev are remounted read-only (they are
 * writable to the sandbox's user otherwise, root or not). The command may have at most
 * `maxProcesses` processes at once (limitedShell). The sandbox dies with bwrap, and bwrap with the server. (bwrap is
 * spawned detached, in a session of its own: there is no terminal to inject input into, and
 * the sandbox stays in bwrap's process group, which the shell tool stops as a whole.)
 */
export function bwrapArgs({
  network,
  tmpBytes,
  maxProcesses,
  options,
  workspace,
  readOnly,
  command,
}: SandboxSettings & {
  options: BwrapOptions;
  workspace: string;
  readOnly: boolean;
  command: string;
}): string[] {
  const size = String(tmpBytes);
  return [
    "--unshare-all",
    "--unshare-user",
    ...(network ? ["--share-net"] : []),
    ...(options.disableUserns ? ["--disable-userns"] : []),
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    ...systemViewArgs(),
    "--proc",
    "/proc",
    // The kernel's settings: their files check only that the writer is the host's root, which
    // the sandbox's root is when the server runs as root (bwrap leaves the directory writable).
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
    "--dev",
    "/dev",
    "--remount-ro",
    "/dev",
    "--size",
    size,
    "--tmpfs",
    "/dev/shm",
    "--size",
    size,
    "--tmpfs",
    "/tmp",
    readOnly ? "--ro-bind-fd" : "--bind-fd",
    String(WORKSPACE_FD),
    workspace,
    // Last of the mounts: the directories above were made in it.
    "--remount-ro",
    "/",
    "--chdir",
    workspace,
    "--setenv",
    "HOME",
    "/tmp",
    "--setenv",
    "TMPDIR",
    "/tmp",
    "--",
    "/bin/sh",
    "-c",
    limitedShell(maxProcesses),
    "sh",
    command,
  ];
}

/**
 * The sandbox's first shell, given the command as $1: it limits the processes (threads
 * included) of the sandbox's user to `maxProcesses` (RLIMIT_NPROC; `ulimit -p` in dash and
 * busybox, `-u` in bash) and then runs the command as `/bin/sh -c -- command`. The kernel
 * (Linux 5.14 and later) counts them per user namespace, so this bounds the sandbox's own
 * processes only, not the server's or another command's; it exempts the host's root, so it
 * binds only when the server does not run as root (then a fork bomb fails with "Cannot fork"
 * at the limit).
 */
function limitedShell(maxProcesses: number): string {
  const n = String(maxProcesses);
  return `{ ulimit -p ${n} || ulimit -u ${n}; } 2>/dev/null; exec /bin/sh -c -- "$1"`;
}

/**
 * The absolute path of `bwrap` on PATH, or null. A relative entry of PATH is taken from this
 * process's working directory, once: a command is started from another directory (the
 * workspace, or `/`), where the same relative name would find nothing.
 */
function findBwrap(path: string): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const candidate = resolve(dir, "bwrap");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

/**
 * The bwraps (path, settings and options) that made a sandbox in this process: a fact of the
 * machine and the binary, so another server started in the same process (tests, embedders)
 * does not spawn the probe again (40 ms, more on a loaded machine). A failure is not kept: it
 * may be the directory's, and is tried again.
 */
const WORKING_BWRAPS = new Set<string>();

/**
 * Whether bwrap can run a sandboxed command here (it needs user namespaces: a container's
 * seccomp or AppArmor profile may forbid them): runs `true` in the sandbox the shell tools
 * use, with `directory` as the workspace (which must open, every time). Null when it works,
 * else why not.
 */
function probeBwrap({
  bwrap,
  options,
  directory,
  ...settings
}: SandboxSettings & {
  bwrap: string;
  options: BwrapOptions;
  directory: string;
}): string | null {
  let fd: number;
  try {
    fd = openSync(directory, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (err) {
    return `cannot open WORKSPACE_ROOT to try the sandbox in (${(err as NodeJS.ErrnoException).code ?? "error"})`;
  }
  const known = JSON.stringify([bwrap, settings.network, settings.tmpBytes, settings.maxProcesses, options]);
  try {
    if (WORKING_BWRAPS.has(known)) return null;
    const args = bwrapArgs({ ...settings, options, workspace: directory, readOnly: true, command: "true" });
    const tried = spawnSync(bwrap, args, {
      stdio: ["ignore", "ignore", "pipe", fd],
      timeout: 10_000,
      env: {},
    });
    if (tried.status === 0) {
      WORKING_BWRAPS.add(known);
      return null;
    }
    const said = tried.stderr?.toString().trim().split("\n").at(-1);
    return `bwrap cannot make a sandbox here (${said || tried.error?.message || `exit ${tried.status ?? tried.signal}`})`;
  } finally {
    closeSync(fd);
  }
}

/**
 * The shell tools' sandbox for SHELL_SANDBOX `mode`: `off` none; `bwrap` bwrap or a problem
 * (the server must not start); `auto` bwrap when it is found and works, else none with
 * a reason to warn about. `directory` is where the probe mounts its workspace (WORKSPACE_ROOT);
 * bwrap is looked for on `path` (the server's PATH).
 */
export function resolveShellSandbox({
  mode,
  directory,
  path = process.env.PATH ?? "",
  ...settings
}: SandboxSettings & {
  mode: ShellSandboxMode;
  directory: string;
  path?: string;
}): { ok: true; sandbox: ShellSandbox } | { ok: false; problem: string } {
  if (mode === "off") return { ok: true, sandbox: UNSANDBOXED };
  if (process.platform !== "linux") {
    const problem = "bubblewrap sandboxes need Linux";
    return mode === "bwrap" ? { ok: false, problem } : { ok: true, sandbox: { kind: "none", reason: problem } };
  }
  const problem = bwrapProblem({ ...settings, directory, path });
  if (typeof problem !== "string") return { ok: true, sandbox: problem };
  return mode === "bwrap" ? { ok: false, problem } : { ok: true, sandbox: { kind: "none", reason: problem } };
}

/**
 * The strictest bwrap sandbox that works here (older bwraps do not know --disable-userns), or
 * why none does (a bwrap before 0.5 does not know --size: none works, unsized tmpfs are not offered).
 */
function bwrapProblem({
  directory,
  path,
  ...settings
}: SandboxSettings & {
  directory: string;
  path: string;
}): ShellSandbox | string {
  const bwrap = findBwrap(path);
  if (!bwrap) return "bwrap is not installed (Debian package bubblewrap)";
  // Exactly the settings, whatever else the caller's object held.
  const settled: SandboxSettings = {
    network: settings.network,
    tmpBytes: settings.tmpBytes,
    maxProcesses: settings.maxProcesses,
  };
  const strict = probeBwrap({ bwrap, ...settled, options: { disableUserns: true }, directory });
  if (strict === null) return { kind: "bwrap", bwrap, ...settled, options: { disableUserns: true } };
  if (probeBwrap({ bwrap, ...settled, options: { disableUserns: false }, directory }) === null) {
    return { kind: "bwrap", bwrap, ...settled, options: { disableUserns: false } };
  }
  return strict;
}
