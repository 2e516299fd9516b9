import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/**
 * A session's shell command (sandboxed, approved: it "can change anything in its workspace")
 * nests 20 directories of 254-character names and leaves a file at the bottom: a path of
 * ~5,100 characters, longer than PATH_MAX (4,096). `DELETE /sessions/{id}` then answers 204,
 * but the workspace, the file and everything else in it stay on disk for good: the removal
 * (removeSessionWorkspace, fs.rm by path names) fails with ENAMETOOLONG, which the delete only
 * logs as a warning. A retried DELETE is 404 and fails the same way. So a user who deletes a
 * session keeps its data on the host (whatever secrets the run left there), and a key can fill
 * the disk past its session quota: make, fill, delete, repeat.
 *
 * product.md: `DELETE /sessions/{id}` "delete it and its data"; README: a deleted session's own
 * workspace is removed with everything in it. Expected: after the 204 the workspace directory
 * is gone.
 */

// Removes what the command made, each directory opened inside its parent (fs.rm cannot).
const REMOVE = `
import os, sys
def rm(dirfd, name):
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dirfd)
    for e in os.scandir(fd):
        if e.is_dir(follow_symlinks=False): rm(fd, e.name)
        else: os.unlink(e.name, dir_fd=fd)
    os.close(fd)
    os.rmdir(name, dir_fd=dirfd)
path = sys.argv[1]
if os.path.lexists(path):
    rm(os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY), os.path.basename(path))
`;

const DEEP =
  'i=0; while [ $i -lt 20 ]; do d=$(printf \'d%0253d\' $i); mkdir "$d" && cd -P "$d" || exit 1; i=$((i+1)); done; ' +
  "echo 'AWS_SECRET=left-behind' > secret.env; echo made";

describe("deleting a session whose workspace holds a tree deeper than PATH_MAX", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it("answers 204 and leaves no workspace behind", async () => {
    const session = (await server.request("POST", "/sessions", { body: { approval: { tools: { shell: "allow" } } } }))
      .body as { id: string };
    const workspace = server.ctx.sessions.workspacePath(await server.ctx.sessions.record(session.id, null));
    try {
      server.upstream.enqueue(
        { toolCalls: [{ id: "c1", name: "shell", arguments: JSON.stringify({ command: DEEP }) }] },
        { text: "done" },
      );
      const waited = await server.request("POST", `/sessions/${session.id}/runs?wait=true`, { body: { input: "go" } });
      expect(waited.body.run.stopReason).toBe("complete");
      const messages = await server.ctx.store.messages.ofRun(session.id, waited.body.run.id);
      expect(messages.find((m) => m.role === "tool")?.content).toContain("made");

      const deleted = await server.request("DELETE", `/sessions/${session.id}`);
      expect(deleted.status).toBe(204);
      expect((await server.request("GET", `/sessions/${session.id}`)).status).toBe(404);
      // The session is gone: so must its workspace be, with the file the run left in it.
      expect(existsSync(workspace), `${workspace} is still on disk after the session's delete`).toBe(false);
    } finally {
      execFileSync("python3", ["-c", REMOVE, workspace]);
    }
  }, 60_000);
});
