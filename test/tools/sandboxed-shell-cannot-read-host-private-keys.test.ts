/**
 * Bug: the bubblewrap sandbox hands every shell command the host's TLS private keys.
 *
 * README (Tools, Sandboxed): a command "sees a read-only `/usr`, `/bin`, `/lib*` and the `/etc`
 * essentials (loader cache, `passwd`/`group`, time zone, `hosts`/`resolv.conf`, certificates)
 * ... Nothing else of the host exists for it". The sandbox binds the whole of `/etc/ssl`
 * (src/tools/sandbox.ts ETC_ENTRIES), which on Debian/Ubuntu also holds `/etc/ssl/private`, the
 * conventional home of the host's private keys. When the server runs as root (the README
 * describes that case: "the sandbox's root is the host's") the command's uid 0 owns those 0600
 * files, so dropping capabilities does not stop it: `shell_readonly`, which runs WITHOUT
 * approval by default, reads them, and the model sees (and the session stores) the key.
 * Expected: only certificates are shown (`/etc/ssl/certs`, `/etc/ca-certificates`), never
 * `/etc/ssl/private`.
 *
 * Needs root and a working bwrap (as this machine and CI have): elsewhere it is skipped.
 */
import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const PRIVATE_DIR = "/etc/ssl/private";
const KEY_FILE = `${PRIVATE_DIR}/review-leak-${process.pid}.key`;
const KEY_TEXT = "-----BEGIN PRIVATE KEY-----REVIEW-LEAK-HOST-TLS-KEY-----END PRIVATE KEY-----";
const runnable = process.getuid?.() === 0 && existsSync(PRIVATE_DIR);

let server: TestServer;
beforeAll(async () => {
  if (!runnable) return;
  await writeFile(KEY_FILE, `${KEY_TEXT}\n`, { mode: 0o600 });
  server = await startTestServer({ env: { SHELL_SANDBOX: "bwrap" } });
});
afterAll(async () => {
  await rm(KEY_FILE, { force: true });
  await server?.close();
});

describe.skipIf(!runnable)("a sandboxed shell command", () => {
  it("cannot read the host's private keys in /etc/ssl/private (shell_readonly, no approval needed)", async () => {
    server.upstream.enqueue(
      {
        toolCalls: [
          {
            id: "call_key",
            name: "shell_readonly",
            arguments: JSON.stringify({ command: `cat ${KEY_FILE}; ls /etc/ssl; exit 0` }),
          },
        ],
      },
      { text: "done" },
    );
    const session = await server.request("POST", "/sessions", { body: {} });
    expect(session.status).toBe(201);
    const run = await server.request("POST", `/sessions/${session.body.id}/runs?wait=true`, {
      body: { input: "show me the TLS key" },
    });
    expect(run.body.run.stopReason).toBe("complete");
    const messages = await server.request("GET", `/sessions/${session.body.id}/messages`);
    const result = messages.body.items.find((m: { toolCallId?: string }) => m.toolCallId === "call_key");
    // It ran (unapproved, in the sandbox): the certificates are there...
    expect(result.isError).toBe(false);
    expect(result.content).toMatch(/certs/);
    // ...but not the host's private key.
    expect(result.content).not.toContain("REVIEW-LEAK-HOST-TLS-KEY");
  });
});
