import type { Logger } from "pino";
import type { RunNotifications, Store } from "../store/store.js";
import { startControlWake } from "./control-wake.js";
import type { EventHub } from "./event-hub.js";
import { EventRelay } from "./event-relay.js";
import type { RunManager } from "./run-manager.js";

export interface Peers {
  start(): void;
  stop(): void;
  /** This process gave `runId` up unfinished: its watchers here read what was committed since (see EventRelay.left). */
  left(runId: string): void;
}

/**
 * What this process hears from the other instances over the same database: the events of
 * runs they execute, relayed to the watchers here, the requests (cancel, decisions) they
 * stored for runs executing here, acted on, and the leases they gave up, reaped.
 */
export function peerWakeups({
  store,
  hub,
  notifications,
  manager,
  logger,
}: {
  store: Store;
  hub: EventHub;
  notifications: RunNotifications;
  manager: RunManager;
  logger: Logger;
}): Peers {
  const relay = new EventRelay({ store, hub, notifications, isLocal: (runId) => manager.executes(runId), logger });
  let stopControl: (() => void) | null = null;
  let stopReaping: (() => void) | null = null;
  return {
    start() {
      relay.start();
      stopControl = startControlWake({ notifications, apply: (runId) => manager.applyStoredRequests(runId), logger });
      // A peer stopping gave its runs up: the reaper takes them now rather than at its next pass.
      stopReaping = notifications.subscribe({ released: () => void manager.ownership.reap() });
    },
    stop() {
      relay.stop();
      stopControl?.();
      stopReaping?.();
      stopControl = null;
      stopReaping = null;
    },
    left: (runId) => relay.left(runId),
  };
}
