import { MAX_PAGES, pagesOf } from "./pages.js";
import { sessionPath } from "./paths.js";

/**
 * The session's run that came after run `finished`, if any: the oldest of those created since,
 * whatever it is now (queued, running, or ended already: watching it from its first event shows
 * it all the same). The runs are read newest first, page after page (a page holds at most 1 MiB
 * of JSON, so runs with large inputs take a page each), until `finished` is found, up to
 * MAX_PAGES pages: null when it is not found within them.
 */
export async function nextRunOf(sessionId: string, finished: string): Promise<string | null> {
  let newer: string | null = null;
  for await (const page of pagesOf<{ id: string }>(sessionPath(sessionId, "/runs"), MAX_PAGES, null, 50)) {
    for (const run of page.items) {
      if (run.id === finished) return newer;
      newer = run.id;
    }
  }
  return null;
}
