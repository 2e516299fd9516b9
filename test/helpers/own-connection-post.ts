import http from "node:http";

/**
 * A JSON POST on a connection of its own (no pool: a request that waits, as a steer does,
 * holds nothing another needs), given up after `timeoutMs`; resolves with the answer's status,
 * 0 when there was none (an error, or the time ran out).
 */
export function postOnOwnConnection(
  url: string,
  {
    payload,
    headers = {},
    timeoutMs = 60_000,
  }: { payload: string; headers?: Record<string, string>; timeoutMs?: number },
): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(url, {
      method: "POST",
      agent: false,
      timeout: timeoutMs,
      headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
    });
    req.on("timeout", () => req.destroy(new Error("TIMEOUT")));
    req.on("error", () => resolve(0));
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.end(payload);
  });
}
