/** The console's calls to the server: same origin, the tab's API key when there is one. */
const KEY_STORAGE = "agent-server-key";

export const key = {
  get: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  set: (value: string) => sessionStorage.setItem(KEY_STORAGE, value),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

/** The server's refusal: its status, and its error's code and message (see openapi.yaml). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the console reads the API's JSON as documented in openapi.yaml.
export async function api(method: string, path: string, body?: unknown): Promise<any> {
  const headers: Record<string, string> = {};
  const bearer = key.get();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) throw new HttpError(res.status, json?.error?.code ?? "HTTP", json?.error?.message ?? res.statusText);
  return json;
}

/** An error as the header shows it: the server's code and words, else the error's own. */
export function errorText(err: unknown): string {
  if (err instanceof HttpError) return `${err.message} (${err.status} ${err.code})`;
  return String(err);
}
