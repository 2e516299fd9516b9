#!/usr/bin/env node
// Summarizes a V8 .cpuprofile (node --cpu-prof): top functions by self time, and by
// inclusive ("total") time, self time grouped by package / project file, and self time
// charged to the nearest project function on the stack (what in our code caused it).
//
//   node bench/cpuprofile-top.mjs FILE.cpuprofile [--top 40] [--filter substring] [--last-ms N]
//
// `--filter` keeps only the part of the profile under frames whose function name or
// url contains the substring (e.g. `runAgent`), to look at one code path. `--last-ms` keeps
// only the samples of the profile's last N ms (the steady phase, without startup and warm-up).
import fs from "node:fs";

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith("--"));
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
if (!file) {
  console.error("usage: node bench/cpuprofile-top.mjs FILE.cpuprofile [--top 40] [--filter substring]");
  process.exit(2);
}
const top = Number(opt("top", 40));
const filter = opt("filter", undefined);
const lastMs = Number(opt("last-ms", 0));

const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Self time per node from the samples and their time deltas.
const selfUs = new Map();
const { samples, timeDeltas } = profile;
const fromUs = lastMs > 0 ? profile.endTime - lastMs * 1000 : Number.NEGATIVE_INFINITY;
let atUs = profile.startTime;
for (let i = 0; i < samples.length; i++) {
  const dt = timeDeltas[i + 1] ?? 0;
  atUs += timeDeltas[i] ?? 0;
  if (atUs < fromUs) continue;
  selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, dt));
}
const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

const short = (url) => {
  if (!url) return "";
  let u = url.replace(/^file:\/\//, "");
  const nm = u.lastIndexOf("node_modules/");
  if (nm >= 0) return u.slice(nm + "node_modules/".length);
  const src = u.search(/\/(src|bench|dist|routes)\//);
  if (src >= 0) u = u.slice(src + 1);
  return u;
};
const keyOf = (n) => {
  const f = n.callFrame;
  const name = f.functionName || "(anonymous)";
  return f.url ? `${name}  ${short(f.url)}:${f.lineNumber + 1}` : name;
};
const groupOf = (n) => {
  const url = n.callFrame.url;
  if (!url) return n.callFrame.functionName.startsWith("(") ? n.callFrame.functionName : "(native/V8 builtins)";
  const u = url.replace(/^file:\/\//, "");
  const nm = u.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = u.slice(nm + "node_modules/".length).split("/");
    return `pkg ${rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (u.startsWith("node:")) return u;
  return short(u);
};

// Which nodes count: all, or those with an ancestor (or self) matching the filter.
const inScope = new Map();
const matches = (n) => {
  if (!filter) return true;
  if (inScope.has(n.id)) return inScope.get(n.id);
  const f = n.callFrame;
  let ok = (f.functionName || "").includes(filter) || (f.url || "").includes(filter);
  if (!ok && parent.has(n.id)) ok = matches(nodes.get(parent.get(n.id)));
  inScope.set(n.id, ok);
  return ok;
};

const isProject = (url) =>
  !!url && !url.includes("node_modules") && /\/(src|routes|bench)\//.test(url) && !url.startsWith("node:");
/** The nearest project frame at or above the node (who in our code caused this time), else its package. */
const ownerOf = (n) => {
  for (let cur = n; cur; cur = parent.has(cur.id) ? nodes.get(parent.get(cur.id)) : undefined) {
    if (isProject(cur.callFrame.url)) return keyOf(cur);
  }
  return `(no project frame on the stack) ${groupOf(n)}`;
};

const self = new Map();
const owners = new Map();
const groups = new Map();
const inclusive = new Map();
let scopeUs = 0;
for (const [id, us] of selfUs) {
  const n = nodes.get(id);
  if (!matches(n)) continue;
  scopeUs += us;
  const k = keyOf(n);
  self.set(k, (self.get(k) ?? 0) + us);
  const g = groupOf(n);
  groups.set(g, (groups.get(g) ?? 0) + us);
  const o = ownerOf(n);
  owners.set(o, (owners.get(o) ?? 0) + us);
  // Inclusive: add to every distinct ancestor key once.
  const seen = new Set();
  for (let cur = n; cur; cur = parent.has(cur.id) ? nodes.get(parent.get(cur.id)) : undefined) {
    const ck = keyOf(cur);
    if (seen.has(ck)) continue;
    seen.add(ck);
    inclusive.set(ck, (inclusive.get(ck) ?? 0) + us);
  }
}

const pct = (us) => `${((100 * us) / (scopeUs || 1)).toFixed(1).padStart(5)}%`;
const ms = (us) => `${(us / 1000).toFixed(1).padStart(8)} ms`;
const print = (title, map, n) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(`  ${ms(us)} ${pct(us)}  ${k}`);
  }
};
console.log(
  `${file}: ${(totalUs / 1000).toFixed(0)} ms sampled${filter ? `, ${(scopeUs / 1000).toFixed(0)} ms under "${filter}"` : ""}`,
);
print("self time by package / file:", groups, 25);
print("top self time:", self, top);
print("self time charged to the nearest project function on the stack (library time included):", owners, top);
print("top inclusive time:", inclusive, top);
