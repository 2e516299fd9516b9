/**
 * The server of a rehearsed image (test/helpers/image-rehearsal.ts): the runtime stage's CMD
 * with its ENV, as the image's user, its volumes the rehearsal's directories and PORT a free
 * one; started once it answers /healthz and the image's HEALTHCHECK passes.
 */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { freePort } from "./child-server.js";
import type { RuntimeRehearsal } from "./image-rehearsal.js";

export interface ImageServer {
  child: ChildProcess;
  url: string;
  /** The environment it runs with (the image's, the rehearsal's paths, then the caller's). */
  env: Record<string, string>;
  output(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the image's CMD with the image's environment, then `env`. */
export async function startImageServer(image: RuntimeRehearsal, env: Record<string, string>): Promise<ImageServer> {
  const port = await freePort();
  const serverEnv = image.env({
    PORT: String(port),
    DATABASE_PATH: join(image.data, "agent.db"),
    WORKSPACE_ROOT: image.workspaces,
    ...env,
  });
  const child = image.spawn(image.stage.cmd, serverEnv);
  let output = "";
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding("utf8").on("data", (d: string) => {
      output += d;
    });
  }
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the server exited (${child.exitCode ?? child.signalCode}):\n${output}`);
    }
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the server did not answer /healthz within 15 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  // The image's HEALTHCHECK, run as Docker would: inside the container, with its environment.
  const health = await image.run(image.stage.healthcheck, serverEnv, 5000);
  if (health.code !== 0) throw new Error(`the HEALTHCHECK failed (${health.code}): ${health.stderr}\n${output}`);
  return { child, url, env: serverEnv, output: () => output, exit };
}

/** SIGTERM (`times` in a row); resolves with how it exited and how long it took. */
export async function stopImageServer(server: ImageServer, times = 1) {
  const begin = Date.now();
  for (let i = 0; i < times; i++) server.child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((r) => {
    timer = setTimeout(() => r("timeout"), 10_000);
  });
  const result = await Promise.race([server.exit, timeout]);
  clearTimeout(timer);
  if (result === "timeout") throw new Error(`no exit within 10 s of SIGTERM:\n${server.output()}`);
  return { ...result, ms: Date.now() - begin };
}
