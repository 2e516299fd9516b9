/**
 * The entries of list settings are read as written or refused naming the variable: an empty
 * AGENT_API_KEYS entry is not read as "no key", a tool named twice in APPROVAL_POLICY_MAX is
 * not overridden by its last entry, an ALLOWED_HOSTS entry is a host as the guard compares it
 * (a URL stands for its host) or refused; and KEEP_ALIVE_TIMEOUT_MS stays within what Node's
 * keep-alive timer holds once its 1000 ms buffer is added.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";

const base = { OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };
const key = (n: number) => `key-${n}-0123456789abcdef`;

describe("list settings", () => {
  it("AGENT_API_KEYS set with an empty entry is refused; unset or blank is no keys", () => {
    for (const value of [",", " , ", `${key(1)},`, `${key(1)},,${key(2)}`, `,${key(1)}`]) {
      expect(() => loadConfig({ ...base, AGENT_API_KEYS: value }), value).toThrow(/AGENT_API_KEYS: has an empty entry/);
    }
    expect(loadConfig({ ...base, AGENT_API_KEYS: "  " }).AGENT_API_KEYS).toEqual([]);
    expect(loadConfig(base).AGENT_API_KEYS).toEqual([]);
    expect(loadConfig({ ...base, AGENT_API_KEYS: ` ${key(1)} , ${key(2)} ` }).AGENT_API_KEYS).toEqual([key(1), key(2)]);
  });

  it("APPROVAL_POLICY_MAX naming a tool, or *, twice is refused naming it", () => {
    expect(() => loadConfig({ ...base, APPROVAL_POLICY_MAX: "shell=deny,shell=deny" })).toThrow(
      /APPROVAL_POLICY_MAX: "shell" is named twice/,
    );
    expect(() => loadConfig({ ...base, APPROVAL_POLICY_MAX: "*=ask,shell=ask,*=allow" })).toThrow(
      /APPROVAL_POLICY_MAX: "\*" is named twice/,
    );
  });

  it("ALLOWED_HOSTS entries are hosts as the guard compares them: a URL stands for its host, a port is dropped", () => {
    const hosts = loadConfig({
      ...base,
      ALLOWED_HOSTS:
        "https://App.Internal:8443/x, *.Example.COM., devbox:3000, [::1]:80, http://[::2], 10.0.0.1, compose_svc, *",
    }).ALLOWED_HOSTS;
    expect(hosts).toEqual(["app.internal", "*.example.com", "devbox", "::1", "::2", "10.0.0.1", "compose_svc", "*"]);
  });

  it("an ALLOWED_HOSTS entry that could never match a Host is refused, quoting it", () => {
    for (const entry of [
      "*.",
      "*example.com",
      "a b",
      "ftp://files.internal",
      "app/path",
      "*.*.example.com",
      "user@host",
    ]) {
      expect(() => loadConfig({ ...base, ALLOWED_HOSTS: entry }), entry).toThrow(
        `ALLOWED_HOSTS: ${JSON.stringify(entry)} can never match`,
      );
    }
  });

  it("KEEP_ALIVE_TIMEOUT_MS is at most 2147482647: Node arms its timer 1000 ms later", () => {
    expect(loadConfig({ ...base, KEEP_ALIVE_TIMEOUT_MS: "2147482647" }).KEEP_ALIVE_TIMEOUT_MS).toBe(2_147_482_647);
    expect(() => loadConfig({ ...base, KEEP_ALIVE_TIMEOUT_MS: "2147482648" })).toThrow(
      /KEEP_ALIVE_TIMEOUT_MS: .*2147482647/,
    );
  });
});
