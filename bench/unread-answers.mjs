#!/usr/bin/env node
// What clients that never read their answers cost the server (README, Security: "Answers must
// be taken"). Starts the built server (dist/) with an API key, makes the largest answer the API
// gives (GET /sessions/{id} of a session whose 172,000-character system prompt is all control
// characters, six bytes each as JSON, with 16 KiB of metadata: the most a 1 MiB body carries,
// and a 1 MiB answer), then opens --connections sockets that each send --pipelined
// requests for it at once and read nothing. Every 5 s it prints the server's resident memory
// (and its growth), the kernel's TCP buffer memory (/proc/net/sockstat, the clients' side
// included), the sockets the server holds, and whether /healthz answers. Linux only.
//
//   npm run build && node bench/unread-answers.mjs [--connections 4] [--pipelined 300] [--seconds 60]
//
// Extra server settings: BENCH_SERVER_ENV='{"RESPONSE_WRITE_TIMEOUT_MS":"5000"}'.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const opts = { connections: 4, pipelined: 300, seconds: 60 };
for (let i = 2; i < process.argv.length; i += 2) {
  const name = process.argv[i]?.replace(/^--/, "");
  if (!(name in opts) || !/^\d+$/.test(process.argv[i + 1] ?? "")) {
    console.error(`usage: node bench/unread-answers.mjs [--connections N] [--pipelined N] [--seconds N]`);
    process.exit(2);
  }
  opts[name] = Number(process.argv[i + 1]);
}

const root = fileURLToPath(new URL("..", import.meta.url));
const KEY = "bench-key-0123456789abcdef";
const dir = mkdtempSync(join(tmpdir(), "unread-answers-"));
const port = 20000 + Math.floor(Math.random() * 20000);
const server = spawn(process.execPath, [join(root, "dist/src/server.js")], {
  cwd: dir,
  env: {
    PATH: process.env.PATH,
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_PATH: join(dir, "agent.db"),
    WORKSPACE_ROOT: join(dir, "ws"),
    AGENT_API_KEYS: KEY,
    OPENAI_MODEL: "m",
    OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
    LOG_LEVEL: "warn",
    ...JSON.parse(process.env.BENCH_SERVER_ENV ?? "{}"),
  },
  stdio: ["ignore", "inherit", "inherit"],
});
const url = `http://127.0.0.1:${port}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${url}/healthz`)).ok) break;
  } catch {}
  if (i > 100) throw new Error("the server did not start");
  await sleep(100);
}

const residentMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))?.[1]) / 1024;
const tcpMb = () => (Number(/TCP: .* mem (\d+)/.exec(readFileSync("/proc/net/sockstat", "utf8"))?.[1]) * 4) / 1024;
const serverSockets = () => {
  let n = 0;
  for (const fd of readdirSync(`/proc/${server.pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${server.pid}/fd/${fd}`).startsWith("socket:")) n++;
    } catch {}
  }
  return n;
};

const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const created = await fetch(`${url}/sessions`, {
  method: "POST",
  headers,
  body: JSON.stringify({ system: "\u0001".repeat(172_000), metadata: { note: "m".repeat(16 * 1024 - 40) } }),
});
const { id } = await created.json();
const answerBytes = (await (await fetch(`${url}/sessions/${id}`, { headers })).arrayBuffer()).byteLength;
await sleep(1000);
const before = { residentMb: residentMb(), tcpMb: tcpMb() };
console.log(JSON.stringify({ ...opts, answerBytes, residentMb: Math.round(before.residentMb) }));

const request = `GET /sessions/${id} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEY}\r\n\r\n`;
const sockets = [];
for (let i = 0; i < opts.connections; i++) {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.once("connect", () => {
    socket.pause();
    socket.write(request.repeat(opts.pipelined));
  });
  sockets.push(socket);
}
const started = Date.now();
while (Date.now() - started < opts.seconds * 1000) {
  await sleep(5000);
  let healthz;
  try {
    healthz = (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    healthz = "failed";
  }
  const resident = residentMb();
  console.log(
    JSON.stringify({
      s: Math.round((Date.now() - started) / 1000),
      residentMb: Math.round(resident),
      growthMb: Math.round(resident - before.residentMb),
      tcpBuffersMb: Math.round(tcpMb() - before.tcpMb),
      serverSockets: serverSockets(),
      healthz,
    }),
  );
}
for (const socket of sockets) socket.destroy();
server.kill();
await new Promise((resolve) => server.once("exit", resolve));
rmSync(dir, { recursive: true, force: true });
