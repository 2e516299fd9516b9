import { describe, expect, it } from "vitest";
import { stdoutDestination } from "../../src/logger.js";

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
