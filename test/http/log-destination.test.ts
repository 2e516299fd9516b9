import { describe, expect, it, vi } from "vitest";
import { createLogger, lazyChild, stdoutDestination } from "../../src/logger.js";

const errno = (code: string) => Object.assign(new Error(code), { code });

describe("the stdout log destination", () => {
  it("writes what a short write left, until the line is out", () => {
    const out: string[] = [];
    const destination = stdoutDestination({
      write: (_fd, data) => {
        const n = Math.min(3, data.length);
        out.push(Buffer.from(data.subarray(0, n)).toString());
        return n;
      },
    });
    destination.write('{"msg":"hello"}\n');
    expect(out.join("")).toBe('{"msg":"hello"}\n');
  });

  it("a pipe that stays full drops the line after a short wait, and the next line starts on a line of its own", () => {
    const out: string[] = [];
    let state: "half" | "full" | "open" = "half";
    const destination = stdoutDestination({
      write: (_fd, data) => {
        if (state === "full") throw errno("EAGAIN");
        // Half of the first line goes out, then the pipe stays full.
        const n = state === "half" ? Math.floor(data.length / 2) : data.length;
        if (state === "half") state = "full";
        out.push(Buffer.from(data.subarray(0, n)).toString());
        return n;
      },
    });
    const started = Date.now();
    destination.write('{"msg":"first line"}\n');
    expect(Date.now() - started).toBeLessThan(1000);
    state = "open";
    destination.write('{"msg":"second"}\n');
    const lines = out.join("").split("\n");
    expect(lines[1]).toBe('{"msg":"second"}');
    expect(JSON.parse(lines[1] ?? "")).toEqual({ msg: "second" });
  });

  it("a reader that went away (EPIPE) ends logging: nothing more is tried, nothing throws", () => {
    let calls = 0;
    const destination = stdoutDestination({
      write: () => {
        calls++;
        throw errno("EPIPE");
      },
    });
    destination.write("a\n");
    destination.write("b\n");
    expect(calls).toBe(1);
  });
});

describe("a lazily made child logger", () => {
  const logged = (level: "info" | "warn") => {
    const lines: string[] = [];
    const destination = { write: (line: string) => lines.push(line) };
    return { lines, logger: createLogger({ level, destination }) };
  };

  it("makes no child for lines below the level, and writes the others with its bindings", () => {
    const { lines, logger } = logged("warn");
    const child = vi.spyOn(logger, "child");
    const log = lazyChild(logger, { runId: "run_1", sessionId: "ses_1" });
    log.info({ resumed: false }, "run started");
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
    log.warn({ error: { code: "X" } }, "run ended with an error");
    log.error("run failed");
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines.map((line) => JSON.parse(line))).toMatchObject([
      { level: 40, runId: "run_1", sessionId: "ses_1", error: { code: "X" }, msg: "run ended with an error" },
      { level: 50, runId: "run_1", sessionId: "ses_1", msg: "run failed" },
    ]);
  });

  it("writes info lines with its bindings at the info level", () => {
    const { lines, logger } = logged("info");
    lazyChild(logger, { runId: "run_2" }).info({ resumed: true }, "run started");
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({
      level: 30,
      runId: "run_2",
      resumed: true,
      msg: "run started",
    });
  });
});
