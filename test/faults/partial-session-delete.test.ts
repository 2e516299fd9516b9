import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const forTest: TestServer[] = [];
afterEach(async () => {
  for (const s of forTest.splice(0)) await s.close();
});

/** Every text the model was sent in the last request. */
// biome-ignore lint/suspicious/noExplicitAny: the fake upstream's parsed body.
const sentTexts = (body: any): string[] => body.messages.map((m: { content: unknown }) => JSON.stringify(m.content));

/**
 * Over SQLite a session is deleted a piece at a time, newest run first. A DELETE that fails
 * part way (a piece's transaction fails: a full disk, an I/O error; here a trigger makes the
 * older run's piece fail) answers an error and leaves the session "as it was before its newest
 * runs". The session's history kept in memory (HistoryTail) was forgotten only after a
 * successful delete: the next run in the session sent the model the messages of the run the
 * delete removed, which GET /sessions/{id}/messages no longer showed. Now it is forgotten
 * however the delete ends.
 */
it("a DELETE that failed part way leaves no deleted message in what the next run sends the model", async () => {
  const server = await startTestServer();
  forTest.push(server);
  const session = (await server.request("POST", "/sessions", { body: {} })).body;
  server.upstream.enqueue({ text: ["first answer"] });
  const first = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "first" } });
  server.upstream.enqueue({ text: ["SECRET answer"] });
  const second = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, {
    body: { input: "SECRET question" },
  });
  expect(second.body.run.status).toBe("finished");
  // The third run's start reads the history into memory: the first two runs' messages.
  server.upstream.enqueue({ text: ["third answer"] });
  const third = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "third" } });
  expect(third.body.run.status).toBe("finished");

  // The first run's piece fails (its transaction rolled back); the newer runs' pieces went before.
  const db = new Database(join(server.dir, "agent.db"));
  db.exec(
    `CREATE TRIGGER review_fail BEFORE DELETE ON runs WHEN old.id = '${first.body.run.id}'
     BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END`,
  );
  const deleted = await server.request("DELETE", `/sessions/${session.id}`);
  expect([deleted.status, deleted.body.error.code]).toEqual([500, "INTERNAL"]);
  db.exec("DROP TRIGGER review_fail");
  db.close();

  // The session is there again, without its newest run.
  const page = await server.request("GET", `/sessions/${session.id}/messages`);
  expect(page.body.items.map((m: { content: string }) => m.content)).toEqual(["first", "first answer"]);

  server.upstream.enqueue({ text: ["fourth answer"] });
  const fourth = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "fourth" } });
  expect(fourth.body.run.status).toBe("finished");
  const sent = sentTexts(server.upstream.requests.at(-1)?.body);
  // What the model is sent is the session's committed history: nothing of the deleted run.
  expect(sent.filter((text) => text.includes("SECRET"))).toEqual([]);
});
