/** Reads `read` every 25 ms until `done` accepts its value (returned); throws naming `what` after 10 s. */
export async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Resolves with the run (`GET /runs/{id}`) once it has finished. */
export const finishedRun = (
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected freely by tests.
  server: { request(method: string, path: string): Promise<{ body: any }> },
  runId: string,
) =>
  until(
    async () => (await server.request("GET", `/runs/${runId}`)).body,
    (run) => run.status === "finished",
    `run ${runId} to finish`,
  );
