import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ApiClient } from "../../src/cli/api-client.js";
import { CliError } from "../../src/cli/cli-error.js";
import { EXIT } from "../../src/cli/exit-codes.js";
import { type HostileApi, startHostileApi } from "../helpers/hostile-api.js";

/**
 * A server that answers the client's JSON requests a byte at a time, for ever (or never
 * finishes its headers' answer): before, the client waited as long as bytes kept coming (Node's
 * fetch gives up only after 300 s without one), so `agent run` hung. Every JSON request now
 * has a deadline for its whole answer (60 s; 400 ms here).
 */
const DEADLINE_MS = 400;
let api: HostileApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

const ask = (url: string) =>
  new ApiClient({ baseUrl: url, apiKey: null }, { answerDeadlineMs: DEADLINE_MS }).json({
    method: "POST",
    path: "/sessions",
    body: {},
    schema: z.object({ id: z.string() }),
  });

/** What the request ended with (before the fix it never ended: the test timed out). */
async function outcome(url: string): Promise<{ error: unknown }> {
  const error = await ask(url).then(
    () => null,
    (err: unknown) => err,
  );
  return { error };
}

describe("a JSON answer that never ends", () => {
  it.each([
    ["trickled a byte every 50 ms", 201],
    ["a refusal trickled the same way", 500],
  ])("%s: given up at the deadline, as a server that cannot be reached", async (_name, status) => {
    api = await startHostileApi((_req, res) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.write('{"id":"');
      const timer = setInterval(() => res.write("x"), 50);
      res.on("close", () => clearInterval(timer));
    });
    const { error } = await outcome(api.url);
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).message).toMatch(/got no whole answer within 0.4 s/);
    expect((error as CliError).exitCode).toBe(EXIT.unreachable);
  });

  it("headers never sent: given up at the deadline", async () => {
    api = await startHostileApi(() => {});
    const { error } = await outcome(api.url);
    expect((error as CliError).message).toMatch(/got no whole answer/);
  });
});
