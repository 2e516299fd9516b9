// Loaded with `node --import` into a server by bench/startup.mjs: when the process's first
// server starts listening, prints one line `startup-probe {json}` to stdout: `cpu` (ms of CPU
// of every thread since the process began), `wall` (ms since it began); a process that ends
// without listening prints the same at its exit, with `exited: true`. With
// STARTUP_PROBE_MODULES=1, `modules`: the modules loaded by then, counted by package (the
// counting hook costs a little, so the timed starts go without it).
import net from "node:net";

const seen = new Set();
if (process.env.STARTUP_PROBE_MODULES === "1") {
  const { registerHooks } = await import("node:module");
  registerHooks({
    load(url, context, next) {
      seen.add(url);
      return next(url, context);
    },
  });
}

/** Modules by package: `ours` for the repository's own, `node:` built-ins left out. */
function modulesByPackage() {
  const counts = {};
  for (const url of seen) {
    if (url.startsWith("node:")) continue;
    const match = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/);
    const key = match ? match[1] : "ours";
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

let reported = false;
/** The probe's line: the CPU and time since the process began (and the modules, when counted). */
function report(extra = {}) {
  reported = true;
  const usage = process.cpuUsage();
  const line = { cpu: (usage.user + usage.system) / 1000, wall: performance.now(), ...extra };
  if (seen.size > 0) line.modules = modulesByPackage();
  process.stdout.write(`startup-probe ${JSON.stringify(line)}\n`);
}

process.on("exit", () => {
  if (!reported) report({ exited: true });
});

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function probedListen(...args) {
  if (!reported) {
    this.once("listening", () => {
      if (!reported) report();
    });
  }
  return listen.apply(this, args);
};
