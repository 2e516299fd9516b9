import { $, el } from "./dom.js";
import { readPages } from "./pages.js";

interface SessionItem {
  id: string;
  createdAt: string;
  activeRunId: string | null;
}

/** Sessions a page of the list holds. */
export const SESSIONS_PAGE = 100;

/**
 * The sessions, newest first, SESSIONS_PAGE at a time: the list shows as many pages as were
 * asked for (one, then one more for each "More sessions"), read again at each refresh; the
 * button shows while more follow.
 */
export class SessionList {
  private pages = 1;
  /** Reads of the list, numbered: one that ends after a later one began draws nothing. */
  private reads = 0;

  constructor(private readonly onOpen: (id: string) => void) {}

  /**
   * Reads the pages shown and draws them, `current` marked; a read overtaken by a later one
   * (begun before a run ended, answered after) neither draws nor fails: the latest read is shown.
   */
  async show(current: string | null): Promise<void> {
    const read = ++this.reads;
    let page: Awaited<ReturnType<typeof readPages<SessionItem>>>;
    try {
      page = await readPages<SessionItem>("/sessions", this.pages, null, SESSIONS_PAGE);
    } catch (err) {
      if (read === this.reads) throw err;
      return;
    }
    if (read !== this.reads) return;
    const { items, cursor } = page;
    const list = $("sessions");
    list.replaceChildren();
    for (const session of items) {
      const item = el("li");
      const button = el("button", { type: "button", "data-session": session.id }, session.id);
      button.append(
        el("small", {}, `${new Date(session.createdAt).toLocaleString()}${session.activeRunId ? " · running" : ""}`),
      );
      if (session.id === current) button.setAttribute("aria-current", "true");
      button.onclick = () => this.onOpen(session.id);
      item.append(button);
      list.append(item);
    }
    $("more-sessions").hidden = cursor === null;
  }

  /** Shows one page more. */
  async more(current: string | null): Promise<void> {
    this.pages++;
    await this.show(current);
  }
}
