import { api, errorText, HttpError, key, unanswered } from "./api.js";
import { removeApproval, showApproval } from "./approvals.js";
import { $, status } from "./dom.js";
import { showCut, showMessage } from "./history.js";
import { LiveText } from "./live-text.js";
import { nextRunOf } from "./next-run.js";
import { isSessionId, runPath, sessionPath } from "./paths.js";
import { SendKey } from "./send-key.js";
import { readSnapshot, type Snapshot } from "./session-snapshot.js";
import { SessionList } from "./sessions.js";
import { watchRun } from "./watch-run.js";

let current: string | null = null;
let stopWatching: (() => void) | null = null;
let activeRun: string | null = null;
/** The view whose prompt's start is on its way (Send is off in it until answered), else null. */
let posting: number | null = null;
const live = new LiveText($("live"));

/** Asks for a key when the server wants one; else shows the sessions. */
async function start(): Promise<void> {
  $("forget-key").hidden = !key.get();
  try {
    await showSessions();
    status("");
    $("key-form").hidden = true;
    $("app").hidden = false;
    const fromHash = location.hash.slice(1);
    if (isSessionId(fromHash)) await openSession(fromHash);
    else if (fromHash) status("the address does not name a session (#ses_…)");
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) {
      $("app").hidden = true;
      $("key-form").hidden = false;
      status(key.get() ? "that key was refused" : "this server needs an API key");
      return;
    }
    status(errorText(err));
  }
}

const sessions = new SessionList((id) => void openSession(id));
const showSessions = () => sessions.show(current);

/**
 * Loads of a session, numbered: one that ends after a later one began is dropped (the last
 * session clicked is the one shown). The view, numbered too: a watcher or a run started for
 * an earlier view reports nothing into this one.
 */
let loads = 0;
let view = 0;

/**
 * Shows session `id` once its record and history are read (as one moment: see readSnapshot);
 * until then the view stays as it was, and so it stays when they cannot be read (the error is
 * shown).
 */
async function openSession(id: string): Promise<void> {
  const load = ++loads;
  let snapshot: Snapshot;
  try {
    snapshot = await readSnapshot(id);
  } catch (err) {
    if (load === loads) status(`${id}: ${errorText(err)}`);
    return;
  }
  if (load !== loads) return;
  view++;
  status("");
  stopWatching?.();
  stopWatching = null;
  current = id;
  location.hash = id;
  $("chat").hidden = false;
  $("session-title").textContent = id;
  $("history").replaceChildren();
  $("approvals").replaceChildren();
  $("run-state").textContent = "";
  live.reset(false);
  activeRun = snapshot.activeRunId;
  for (const message of snapshot.messages) showMessage(message);
  if (snapshot.cutAt !== null) showCut(snapshot.cutAt);
  if (activeRun) watch(activeRun);
  showBusy();
  await showSessions().catch((err) => status(errorText(err)));
}

/** Cancel while a run is active; Send off then, and while this view's prompt is on its way. */
function showBusy(): void {
  $("cancel").hidden = activeRun === null;
  $<HTMLButtonElement>("send").disabled = activeRun !== null || posting === view;
}

/** Shows run `runId`'s events in the current view (the watcher before is stopped). */
function watch(runId: string): void {
  stopWatching?.();
  const mine = view;
  stopWatching = watchRun(
    runId,
    (event) => {
      if (mine !== view) return;
      if (event.type === "turn.started") live.reset(true);
      else if (event.type === "text.delta") live.append(event.text);
      else if (event.type === "message") {
        if (event.message.role === "assistant") live.reset(false);
        showMessage(event.message);
      } else if (event.type === "approval.requested") showApproval(event);
      else if (event.type === "approval.resolved") removeApproval(event.toolCallId);
      else if (event.type === "run.finished") {
        live.reset(false);
        $("approvals").replaceChildren();
        const { stopReason, stopDetail, error } = event.run;
        // The error's own words, else the server's sentence on where it stopped and what to try.
        const why = error?.message ?? stopDetail;
        $("run-state").textContent = `run finished: ${stopReason}${why ? ` — ${why}` : ""}`;
        activeRun = null;
        $("cancel").hidden = true;
        // A run cancelled for a run started with ifBusy "interrupt" (its stop detail says so) is
        // followed by that run, whose insert comes once this end is stored.
        void followNext(runId, { interrupted: stopDetail?.includes('ifBusy "interrupt"') ?? false });
      }
    },
    (state) => {
      if (mine === view) status(state === "live" ? `watching ${runId}` : state);
    },
  );
}

/** How often, and how many times, the session is read for the run that interrupted the one watched. */
const INTERRUPTER_POLL = { ms: 250, times: 40 };

/**
 * After run `finished` of the current view ended: the session's next run (started from
 * elsewhere: queued behind it, or interrupting it), if any, watched from its first event; an
 * interrupted run's is looked for until it comes (INTERRUPTER_POLL). Send stays off until the
 * session is read, and while that run is active.
 */
async function followNext(finished: string, { interrupted }: { interrupted: boolean }): Promise<void> {
  const mine = view;
  const sessionId = current as string;
  let next: string | null = null;
  try {
    for (let read = 0; next === null && mine === view && read < (interrupted ? INTERRUPTER_POLL.times : 1); read++) {
      if (read > 0) await new Promise((resolve) => setTimeout(resolve, INTERRUPTER_POLL.ms));
      next = await nextRunOf(sessionId, finished);
    }
    if (mine === view) status("");
  } catch (err) {
    if (mine === view) status(errorText(err));
  }
  if (mine !== view) return;
  activeRun = next;
  showBusy();
  if (next) watch(next);
  await showSessions().catch((err) => status(errorText(err)));
}

// The address names the session shown: Back, Forward or a pasted link naming another session
// opens it (once signed in; before, start() reads the hash).
window.addEventListener("hashchange", () => {
  const id = location.hash.slice(1);
  if (isSessionId(id) && id !== current && !$("app").hidden) void openSession(id);
});
$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  key.set($<HTMLInputElement>("key").value.trim());
  void start();
});
$("forget-key").onclick = () => {
  key.clear();
  location.hash = "";
  location.reload();
};
$("more-sessions").onclick = () => void sessions.more(current).catch((err) => status(errorText(err)));
$("new-session").onclick = async () => {
  try {
    const session = await api("POST", "/sessions", {});
    await openSession(session.id);
  } catch (err) {
    status(errorText(err));
  }
};
const sendKey = new SendKey();

/** Shows run `runId` as the view's active run, watched from its first event. */
function follow(runId: string): void {
  $("run-state").textContent = "";
  activeRun = runId;
  watch(runId);
}

// One start per submission: Send is off until it is answered, and a retry of the request (the
// browser's own, on a connection that closed, or Send again after no answer came) starts
// nothing twice under its key (SendKey). Refused because a run started elsewhere is active
// (409 SESSION_BUSY naming it), the view follows that run; the prompt stays, to send after it.
$("prompt-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (!current || posting === view) return;
  const mine = view;
  const input = $<HTMLTextAreaElement>("prompt").value;
  const sent = { view: mine, input, key: sendKey.keyFor({ view: mine, input }) };
  posting = mine;
  showBusy();
  try {
    const headers = { "idempotency-key": sent.key };
    const run = await api("POST", sessionPath(current, "/runs"), { input }, { headers });
    sendKey.answered(mine);
    if (mine !== view) return; // another session was opened meanwhile: the run is in its own
    $<HTMLTextAreaElement>("prompt").value = "";
    follow(run.id);
  } catch (err) {
    const lost = unanswered(err);
    if (lost) sendKey.keep(sent);
    else sendKey.answered(mine);
    if (lost && mine === view)
      status(`no answer to Send (${errorText(err)}): the run may have started; Send again gets it, never a second`);
    else status(errorText(err));
    const busyWith = err instanceof HttpError && err.code === "SESSION_BUSY" ? err.details.runId : undefined;
    if (mine === view && typeof busyWith === "string" && busyWith !== activeRun) follow(busyWith);
  } finally {
    if (posting === mine) posting = null;
    if (mine === view) showBusy();
  }
});
$("cancel").onclick = async () => {
  if (activeRun) await api("DELETE", runPath(activeRun)).catch((err) => status(errorText(err)));
};

void start();
