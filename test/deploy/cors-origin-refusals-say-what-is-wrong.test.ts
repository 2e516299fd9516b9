/**
 * A CORS_ORIGINS entry is compared byte for byte with the `Origin` a browser sends. One that looks
 * like scheme://host[:port] but is not in the browser's form (a default port written out,
 * upper-case letters) is refused, and the message says what exactly is wrong and what to write.
 */
import { expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";

const base = { OPENAI_API_KEY: "sk-test-key", OPENAI_MODEL: "fake-model" };

function refusal(value: string): string {
  try {
    loadConfig({ ...base, CORS_ORIGINS: value });
  } catch (err) {
    return (err as Error).message;
  }
  return "(accepted)";
}

it.each([
  ["https://a.com:443", /https's default port 443 written out; write "https:\/\/a\.com"/],
  ["http://a.com:80", /http's default port 80 written out; write "http:\/\/a\.com"/],
  ["HTTPS://A.com", /upper-case letters in the scheme or host; write "https:\/\/a\.com"/],
  ["https://app.example.com/", /a path, query or trailing slash; write "https:\/\/app\.example\.com"/],
])("CORS_ORIGINS=%s is refused saying what exactly is wrong", (value, reason) => {
  const message = refusal(value);
  expect(message).toContain(`CORS_ORIGINS: ${JSON.stringify(value)} is not an origin`);
  expect(message).toMatch(reason);
  expect(message).not.toContain("write scheme://host[:port]");
});

it("a value that is no http(s) URL at all still gets the form to write", () => {
  expect(refusal("app.example.com")).toMatch(/"app\.example\.com" is not an origin: write scheme:\/\/host\[:port\]/);
  expect(loadConfig({ ...base, CORS_ORIGINS: "https://a.com, http://localhost:5173" }).CORS_ORIGINS).toEqual([
    "https://a.com",
    "http://localhost:5173",
  ]);
});

it("an entry with credentials is refused without repeating them (the refusal goes to the logs)", () => {
  const message = refusal("https://deploy:hunter2-secret@app.example.com");
  expect(message).toMatch(/credentials \(user@\); write "https:\/\/app\.example\.com"/);
  expect(message).toContain('"https://***@app.example.com" is not an origin');
  expect(message).not.toMatch(/hunter2|deploy:/);
});

it.each([
  "https://deploy:hunter2#secret@app.example.com",
  "https://deploy:hunter2/secret@app.example.com",
  "https://deploy:hunter2?secret@app.example.com",
])("CORS_ORIGINS=%s (a password with #, / or ?) is refused without printing it", (value) => {
  const message = refusal(value);
  expect(message).toContain("CORS_ORIGINS");
  expect(message).not.toMatch(/hunter2|secret/);
});
