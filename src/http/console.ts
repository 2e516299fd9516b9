import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AppError, notFound } from "../errors.js";

/** The console's routes: open (the page asks for a key itself), like health. */
export const CONSOLE_ROUTES = new Set(["/", "/console/assets/:file"]);

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};
/** The page loads only what the server itself serves: no CDN, nothing fetched from elsewhere. */
const CSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/** The package's root (where package.json is), from this module in src/ or dist/src/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** The built console (`npm run build` writes dist/console), read once into memory; null when not built. */
export function loadConsole(): { index: Buffer; assets: Map<string, Buffer> } | null {
  const dir = join(packageRoot(), "dist/console");
  if (!existsSync(join(dir, "index.html"))) return null;
  const assets = new Map<string, Buffer>();
  const assetDir = join(dir, "assets");
  if (existsSync(assetDir))
    for (const name of readdirSync(assetDir)) assets.set(name, readFileSync(join(assetDir, name)));
  return { index: readFileSync(join(dir, "index.html")), assets };
}

export type ConsoleFiles = NonNullable<ReturnType<typeof loadConsole>>;

/** The page, with its security headers (CSP, nosniff, no referrer), or 503 CONSOLE_NOT_BUILT. */
export function consolePage(files: ConsoleFiles | null): { body: Buffer; headers: Record<string, string> } {
  if (!files) throw new AppError("CONSOLE_NOT_BUILT", "the console is not built: run `npm run build`", 503);
  return {
    body: files.index,
    headers: {
      "content-type": TYPES[".html"] as string,
      "content-security-policy": CSP,
      // Read as HTML only; and the address (its hash names a session) goes nowhere with a link followed.
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  };
}

/** One of the page's assets, or 404. */
export function consoleAsset(
  files: ConsoleFiles | null,
  name: string,
): { body: Buffer; headers: Record<string, string> } {
  const body = files?.assets.get(name);
  if (!body) throw notFound("asset", name);
  return {
    body,
    headers: {
      "content-type": TYPES[extname(name)] ?? "application/octet-stream",
      "cache-control": "public, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
    },
  };
}
