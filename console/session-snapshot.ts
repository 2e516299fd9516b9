import { api } from "./api.js";
import { readPages } from "./pages.js";
import { sessionPath } from "./paths.js";
import type { Message } from "./types.js";

/** How many times the session and its history are read while runs start and end as they are read. */
const TRIES = 3;

/** What opening a session shows: its history up to a run, and that run, watched from its first event. */
export interface Snapshot {
  /**
   * The run to watch from its first event (its events show its messages, and the runs after it
   * are followed from theirs), or null: the session is idle, its history is all shown.
   */
  activeRunId: string | null;
  /** The messages before that run's, oldest first. */
  messages: Message[];
  /** When the history was longer than the console reads: how many of its latest messages were read; else null. */
  cutAt: number | null;
}

const activeRunOf = async (id: string): Promise<string | null> => (await api("GET", sessionPath(id))).activeRunId;

const newestMessageOf = async (id: string): Promise<string | null> =>
  (await api("GET", sessionPath(id, "/messages?order=newest&limit=1"))).items[0]?.id ?? null;

/**
 * Session `id` as of one moment, though its record and its history are separate reads (runs
 * start and end between them), so that each message shows once, in order: from the history,
 * or from the events of the run watched and of the runs followed after it.
 * - The session read first names an active run: that run began before the history was read, so
 *   from its first message on the history holds only its messages and later runs'; the history
 *   is cut there.
 * - The session read first is idle: it is read again after the history, then its newest
 *   message. A run active by then, or a message newer than the history's (a run started and
 *   ended meanwhile), means the history may hold part of a run: all is read again, up to TRIES
 *   times; after the last, a run active at its second read is watched (the history cut at it),
 *   else the history is shown as read.
 */
export async function readSnapshot(id: string): Promise<Snapshot> {
  for (let tried = 1; ; tried++) {
    const before = await activeRunOf(id);
    // Newest first, so that a history longer than the console reads shows its latest messages.
    const history = await readPages<Message>(sessionPath(id, "/messages?order=newest"));
    const newest = history.items[0]?.id ?? null;
    const messages = history.items.reverse();
    const cutAt = history.cursor === null ? null : messages.length;
    if (before !== null) return { activeRunId: before, messages: upTo(messages, before), cutAt };
    const after = await activeRunOf(id);
    if (after === null && (await newestMessageOf(id)) === newest) return { activeRunId: null, messages, cutAt };
    if (tried === TRIES) return { activeRunId: after, messages: after ? upTo(messages, after) : messages, cutAt };
  }
}

/** `messages` before the first of run `runId`'s (messages are in the session's order: the ones after it are its, or later runs'). */
function upTo(messages: Message[], runId: string): Message[] {
  const first = messages.findIndex((message) => message.runId === runId);
  return first === -1 ? messages : messages.slice(0, first);
}
