/**
 * The keys of a terminal that a run may ask on (TerminalKeys) and the questions read from
 * them (terminalAsk), over a fake terminal: what the client's pty tests drive end to end,
 * here key by key.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { terminalAsk } from "../../src/cli/terminal-ask.js";
import { FOREGROUND_POLL_MS, TerminalKeys } from "../../src/cli/terminal-keys.js";
import { dist } from "../helpers/file-limit-child.js";
import { tempDir } from "../helpers/temp-dir.js";
import { until } from "../helpers/until.js";

/** A terminal's input: what is written to it is typed; `modes` records raw (true) and cooked. */
class FakeTty extends PassThrough {
  readonly isTTY = true;
  readonly modes: boolean[] = [];
  setRawMode(raw: boolean): this {
    this.modes.push(raw);
    return this;
  }
}

/** Lets the fake terminal's keys reach their reader. */
const typed = () => new Promise((resolve) => setImmediate(resolve));

function setup(
  deps: {
    onInterrupt?: () => void;
    suspend?: () => void;
    quit?: () => void;
    stopOutput?: () => void;
    startOutput?: () => void;
  } = {},
) {
  const tty = new FakeTty();
  const output = new PassThrough();
  let shown = "";
  output.on("data", (chunk: Buffer) => {
    shown += chunk.toString();
  });
  const told = { ignored: 0 };
  const keys = new TerminalKeys({
    input: tty,
    onInterrupt: deps.onInterrupt ?? (() => {}),
    onIgnored: () => told.ignored++,
    suspend: deps.suspend,
    quit: deps.quit,
    stopOutput: deps.stopOutput,
    startOutput: deps.startOutput,
    inForeground: () => true,
  });
  keys.start();
  const ask = terminalAsk({ keys, output });
  const question = () => {
    const withdraw = new AbortController();
    return { answer: ask("Allow this call? [y/N] ", withdraw.signal), withdraw };
  };
  return { tty, keys, question, told, shown: () => shown };
}

/**
 * Types `key` (as JavaScript source) into TerminalKeys, with its default suspend and quit, in a
 * child leading a session and process group of its own (never this test's), beside a sibling
 * in that group that notes in a file when it gets `signal`. Resolves once the child ended, with
 * how, what it printed ("typed" once the sibling ended, if it lives that long) and the note.
 */
async function keyInOwnProcessGroup(
  key: string,
  signal: string,
): Promise<{ code: number | null; signal: string | null; stdout: string; sibling: string }> {
  const dir = tempDir("process-group-key-");
  try {
    const script = join(dir.path, "child.mjs");
    const note = join(dir.path, "sibling");
    writeFileSync(
      script,
      `
      import { spawn, spawnSync } from "node:child_process";
      import { PassThrough } from "node:stream";
      import { TerminalKeys } from ${dist("src/cli/terminal-keys.js")};
      const sibling = spawn(process.execPath, ["-e", \`
        process.on(${JSON.stringify(signal)}, () => {
          require("node:fs").writeFileSync(${JSON.stringify(note)}, ${JSON.stringify(signal)});
          process.exit(0);
        });
        process.stdout.write("ready");
        setTimeout(() => process.exit(0), 3000);
      \`], { stdio: ["ignore", "pipe", "inherit"] });
      let said = "";
      sibling.stdout.on("data", (d) => { said += d; });
      while (!said.includes("ready")) await new Promise((resolve) => setTimeout(resolve, 10));
      const tty = Object.assign(new PassThrough(), { setRawMode() {} });
      const keys = new TerminalKeys({ input: tty, onInterrupt() {}, onIgnored() {} });
      keys.start();
      tty.write("${key}");
      await new Promise((resolve) => sibling.on("close", resolve));
      keys.stop();
      process.stdout.write("typed");
    `,
    );
    const child = spawn(process.execPath, [script], { detached: true, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    const [code, ended] = await new Promise<[number | null, string | null]>((resolve) =>
      child.on("close", (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
    );
    // The sibling notes its signal before it exits; the child may have ended first.
    await until(
      () => existsSync(note),
      (noted) => noted,
      `the sibling's ${signal}`,
    ).catch(() => {});
    return { code, signal: ended, stdout, sibling: existsSync(note) ? readFileSync(note, "utf8") : "" };
  } finally {
    dir.cleanup();
  }
}

describe("the keys a question is answered with", () => {
  it("are typed after it was shown: keys typed while no question is open are dropped, and that is told once", async () => {
    const { tty, question, told } = setup();
    tty.write("y\r");
    await typed();
    tty.write("yes\r");
    await typed();
    expect(told.ignored).toBe(1);
    const first = question();
    tty.write("n\r");
    expect(await first.answer).toBe(false);
    const second = question();
    tty.write("y\r");
    expect(await second.answer).toBe(true);
  });

  it("a line half typed into a withdrawn question does not carry into the next one", async () => {
    const { tty, question } = setup();
    const first = question();
    tty.write("y");
    await typed();
    first.withdraw.abort();
    expect(await first.answer).toBe(null);
    const second = question();
    tty.write("\r");
    expect(await second.answer).toBe(false);
  });

  it("Ctrl-D on an empty line denies", async () => {
    const { tty, question } = setup();
    const asked = question();
    tty.write("\u0004");
    expect(await asked.answer).toBe(false);
  });

  it("Ctrl-C interrupts with a question open or not; keys after it in the same read answer nothing", async () => {
    let interrupts = 0;
    let open: AbortController | null = null;
    // As the client's cancel does: an interrupt withdraws the question.
    const { tty, question, told } = setup({
      onInterrupt: () => {
        interrupts++;
        open?.abort();
      },
    });
    const asked = question();
    open = asked.withdraw;
    tty.write("y\u0003y\r");
    expect(await asked.answer).toBe(null);
    expect([interrupts, told.ignored]).toEqual([1, 1]);
    tty.write("\u0003");
    await typed();
    expect(interrupts).toBe(2);
  });

  it("Ctrl-S stops the output and Ctrl-Q starts it, as the flow control raw mode turns off; Ctrl-C starts it too, then interrupts", async () => {
    const seen: string[] = [];
    const { tty, question, told } = setup({
      stopOutput: () => seen.push("stop"),
      startOutput: () => seen.push("start"),
      onInterrupt: () => seen.push("interrupt"),
    });
    tty.write("\u0013");
    await typed();
    const asked = question();
    tty.write("y\u0011\u0013\r");
    expect(await asked.answer).toBe(true);
    tty.write("\u0003");
    await typed();
    // Neither key is typed into the question nor counts as typed while none was open.
    expect(seen).toEqual(["stop", "start", "stop", "start", "interrupt"]);
    expect(told.ignored).toBe(0);
  });

  it("Ctrl-Z suspends in cooked mode, comes back in raw mode and shows the open question again", async () => {
    let modeWhenSuspended: boolean | undefined;
    const { tty, question, shown } = setup({ suspend: () => (modeWhenSuspended = tty.modes.at(-1)) });
    const asked = question();
    tty.write("y\u001a");
    await typed();
    expect(modeWhenSuspended).toBe(false);
    expect(tty.modes).toEqual([true, false, true]);
    expect(shown().match(/Allow this call\? \[y\/N\] /g)).toHaveLength(2);
    tty.write("\r");
    expect(await asked.answer).toBe(true);
  });

  it("Ctrl-\\ quits with the terminal given back first, whether a question is open or not", async () => {
    let modeWhenQuit: boolean | undefined;
    let quits = 0;
    const { tty, question, told } = setup({
      quit: () => {
        quits++;
        modeWhenQuit = tty.modes.at(-1);
      },
    });
    const asked = question();
    tty.write("y\u001cy\r");
    await typed();
    expect(quits).toBe(1);
    expect(modeWhenQuit).toBe(false);
    expect(tty.modes).toEqual([true, false]);
    expect(tty.listenerCount("data")).toBe(0);
    expect(told.ignored).toBe(0);
    asked.withdraw.abort();
  });

  it("stop gives the terminal back: cooked mode, no longer read, so nothing keeps the process alive", async () => {
    const { tty, keys, told } = setup();
    keys.stop();
    expect(tty.modes).toEqual([true, false]);
    expect(tty.listenerCount("data")).toBe(0);
    expect(tty.isPaused()).toBe(true);
    tty.write("y\r");
    await typed();
    expect(told.ignored).toBe(0);
  });

  it("Ctrl-Z stops the whole process group, as the terminal's own Ctrl-Z does: a parent (npx) stops with the client", async () => {
    // (The group has no parent in its session, so the kernel drops the stop for the child
    // itself.) Before: only the client stopped, so under `npx` the shell never got the terminal back.
    const ended = await keyInOwnProcessGroup("\\u001a", "SIGTSTP");
    expect(ended).toEqual({ code: 0, signal: null, stdout: "typed", sibling: "SIGTSTP" });
  });

  it("Ctrl-\\ quits the whole process group, as the terminal's own Ctrl-\\ does: the client and a parent end by SIGQUIT", async () => {
    const ended = await keyInOwnProcessGroup("\\u001c", "SIGQUIT");
    expect(ended).toEqual({ code: null, signal: "SIGQUIT", stdout: "", sibling: "SIGQUIT" });
  });

  it("in the background, the terminal is left alone (no raw mode, not read) until the process is brought to the foreground", async () => {
    const tty = new FakeTty();
    let foreground = false;
    const keys = new TerminalKeys({ input: tty, onInterrupt() {}, onIgnored() {}, inForeground: () => foreground });
    keys.start();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (chunk: Buffer) => {
      shown += chunk.toString();
    });
    const ask = terminalAsk({ keys, output });
    const answer = ask("Allow this call? [y/N] ", new AbortController().signal);
    await new Promise((resolve) => setTimeout(resolve, FOREGROUND_POLL_MS * 2));
    expect(tty.modes).toEqual([]);
    expect(tty.listenerCount("data")).toBe(0);
    foreground = true;
    await until(
      () => tty.modes,
      (modes) => modes.length > 0,
      "raw mode once in the foreground",
    );
    expect(tty.modes).toEqual([true]);
    // The question shown in the background is shown again once it can be answered.
    expect(shown.match(/Allow this call\? \[y\/N\] /g)).toHaveLength(2);
    tty.write("y\r");
    expect(await answer).toBe(true);
    keys.stop();
    expect(tty.modes).toEqual([true, false]);
  });

  it("stopped while waiting for the foreground, the keys never touch the terminal", async () => {
    const tty = new FakeTty();
    const keys = new TerminalKeys({ input: tty, onInterrupt() {}, onIgnored() {}, inForeground: () => false });
    keys.start();
    keys.stop();
    await new Promise((resolve) => setTimeout(resolve, FOREGROUND_POLL_MS * 2));
    expect(tty.modes).toEqual([]);
  });

  it("a client started as a background job (`&`) keeps running, and takes raw mode once brought to the foreground (`fg`)", async () => {
    // Before: setting raw mode from the background stopped the process (SIGTTOU, "Stopped (tty output)").
    const dir = tempDir("background-keys-");
    try {
      const child = join(dir.path, "child.mjs");
      writeFileSync(
        child,
        `
        import { TerminalKeys } from ${dist("src/cli/terminal-keys.js")};
        const setRawMode = process.stdin.setRawMode.bind(process.stdin);
        process.stdin.setRawMode = (raw) => { console.log("raw:" + raw); return setRawMode(raw); };
        const keys = new TerminalKeys({ input: process.stdin, onInterrupt() {}, onIgnored() {} });
        keys.start();
        console.log("started");
        setTimeout(() => { keys.stop(); console.log("done"); }, 1500);
      `,
      );
      const shell = `node ${JSON.stringify(child)} & sleep 0.6; jobs -l; fg`;
      const out = spawnSync("script", ["-qfec", `bash --norc --noprofile -ic '${shell}'`, "/dev/null"], {
        encoding: "utf8",
        timeout: 20_000,
        env: { ...process.env, PATH: `${join(process.execPath, "..")}:${process.env.PATH ?? ""}` },
      });
      const text = out.stdout.replace(/\r/g, "");
      expect(text).toMatch(/started[\s\S]*Running[\s\S]*raw:true[\s\S]*raw:false[\s\S]*done/);
      expect(text).not.toContain("Stopped");
    } finally {
      dir.cleanup();
    }
  });
});
