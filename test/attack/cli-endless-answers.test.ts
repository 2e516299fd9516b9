/**
 * Attacker: the server the client is pointed at (or a man in the middle on plain HTTP). It
 * answers with something that never ends, as fast as the client reads: a JSON answer (here to
 * `POST /sessions`) of endless spaces, the same as a refusal (500), an SSE `data:` line that never ends, or a frame of
 * endless `data:` lines never closed by a blank line. The client kept all of it in memory: it
 * grew by ~200 MB a second (3.3 GB after 15 s for the JSON answer, 2.2 GB for the frame) until
 * the machine or V8's heap gave out, and never said why. An agent server's answers and events
 * have a size (the largest echo the input, which its BODY_LIMIT_BYTES bounds): past
 * MAX_ANSWER_BYTES the client stops reading and exits 70, saying so.
 */
import { readFileSync } from "node:fs";
import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { startCli } from "../helpers/cli-process.js";
import { type HostileApi, runJson, sendJson, startHostileApi } from "../helpers/hostile-api.js";

/** The client's peak RSS (MB) beyond which the test stops it: far above what it needs at its limit. */
const RSS_LIMIT_MB = 600;
/** How long the client may take to reach its limit and give up. */
const DEADLINE_MS = 20_000;

/** Writes `chunk` for ever, as fast as the other end reads. */
function pump(res: http.ServerResponse, chunk: Buffer): void {
  const more = () => {
    while (!res.destroyed && res.write(chunk)) {}
  };
  res.on("drain", more);
  more();
}

function rssMb(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? 0 : Number(kb) / 1024;
  } catch {
    return 0; // gone
  }
}

describe("CLI: a hostile server's answer that never ends", () => {
  let api: HostileApi;
  let endless: "json" | "refusal" | "line" | "frame" = "json";
  beforeAll(async () => {
    const mb = 1024 * 1024;
    api = await startHostileApi((req, res) => {
      if (req.method === "POST" && req.url === "/sessions") {
        if (endless !== "json" && endless !== "refusal") return sendJson(res, 201, { id: "ses_1" });
        res.writeHead(endless === "json" ? 201 : 500, { "content-type": "application/json" });
        return pump(res, Buffer.alloc(mb, " "));
      }
      if (req.method === "POST") return sendJson(res, 201, runJson());
      res.writeHead(200, { "content-type": "text/event-stream" });
      if (endless === "line") {
        res.write("id: 1\nevent: message\ndata: ");
        return pump(res, Buffer.alloc(mb, "a"));
      }
      pump(res, Buffer.from("data: x\n".repeat(mb / 8)));
    });
  });
  afterAll(async () => {
    await api?.close();
  });

  for (const [kind, said] of [
    ["json", /POST \/sessions answered with more than 16 MiB/],
    ["refusal", /POST \/sessions answered 500 without an agent server's error/],
    ["line", /the server sent an event of more than 16 Mi characters/],
    ["frame", /the server sent an event of more than 16 Mi characters/],
  ] as const) {
    it(`${kind}: stops reading at its limit and exits 70, saying why, with its memory bounded`, async () => {
      endless = kind;
      const started = Date.now();
      // A cap of 16 MiB (AGENT_MAX_ANSWER_MIB) shows what the default 128 does, eight times sooner.
      const cli = startCli({ args: ["run", "hi"], env: { AGENT_URL: api.url, AGENT_MAX_ANSWER_MIB: "16" } });
      const pid = cli.child.pid as number;
      onTestFinished(() => {
        cli.child.kill("SIGKILL");
      });
      let peak = 0;
      const sampler = setInterval(() => {
        peak = Math.max(peak, rssMb(pid));
        if (peak > RSS_LIMIT_MB) cli.child.kill("SIGKILL");
      }, 50);
      // Before the limit, the never-ending line did not grow fast: each chunk rescanned all of it.
      const deadline = setTimeout(() => cli.child.kill("SIGKILL"), DEADLINE_MS);
      const result = await cli.done.finally(() => {
        clearInterval(sampler);
        clearTimeout(deadline);
      });
      const seconds = (Date.now() - started) / 1000;
      console.log(`${kind}: peak RSS ${Math.round(peak)} MB, ${seconds.toFixed(1)} s, exit ${result.code}`);
      expect(peak).toBeLessThan(RSS_LIMIT_MB);
      expect(seconds * 1000).toBeLessThan(DEADLINE_MS);
      expect(result.stderr).toMatch(said);
      expect(result.code).toBe(70);
    }, 60_000);
  }
});
