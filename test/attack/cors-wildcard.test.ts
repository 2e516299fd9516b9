/**
 * A web page on any origin against a server without API keys whose operator set
 * CORS_ORIGINS=*: the page's script posts a session that allows every tool and reads the
 * answer, as it would through a visitor's browser (a preflight, then the request with its
 * Origin). No DNS rebinding is needed: the server's own CORS answer lets the page in. Such a
 * server must not start.
 */
import { expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startTestServer } from "../helpers/test-server.js";

const EVIL = "https://evil.example";
const ENV = { CORS_ORIGINS: "*", OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };

it("a page on any origin cannot drive a keyless server: CORS_ORIGINS=* without AGENT_API_KEYS does not start", async () => {
  let refused: unknown = null;
  try {
    loadConfig(ENV);
  } catch (err) {
    refused = err;
  }
  if (refused === null) {
    // The server would start: act as the page does and see whether the browser would let it through.
    const server = await startTestServer({ env: { CORS_ORIGINS: "*" } });
    try {
      const preflight = await fetch(`${server.url}/sessions`, {
        method: "OPTIONS",
        headers: {
          origin: EVIL,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type",
        },
      });
      const created = await fetch(`${server.url}/sessions`, {
        method: "POST",
        headers: { origin: EVIL, "content-type": "application/json" },
        body: JSON.stringify({ approval: { default: "allow" } }),
      });
      expect({
        preflight: preflight.headers.get("access-control-allow-origin"),
        readable: created.headers.get("access-control-allow-origin"),
        created: created.ok,
      }).toEqual({ preflight: null, readable: null, created: false });
    } finally {
      await server.close();
    }
  }
  expect(String(refused)).toMatch(/CORS_ORIGINS: \* without AGENT_API_KEYS lets any web page/);
  // With keys, a page must still hold one: * is allowed.
  expect(loadConfig({ ...ENV, AGENT_API_KEYS: "a-key-of-sixteen-chars" }).CORS_ORIGINS).toEqual(["*"]);
});
