import type { Logger } from "pino";
import type { RunNotifications, Store } from "../store/store.js";
import { startControlWake } from "./control-wake.js";
import type { EventHub } from "./event-hub.js";
import { EventRelay } from "./event-relay.js";
import type { RunManager } from "./run-manager.js";

export interface Peers {
  start(): void;
  stop(): void;
}

/**
 * What this process hears from the other instances over the same database: the events of
 * runs they execute, relayed to the watchers here, and the requests (cancel, decisions) they
 * stored for runs executing here, acted on.
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
  return {
    start() {
      relay.start();
      stopControl = startControlWake({ notifications, apply: (runId) => manager.applyStoredRequests(runId), logger });
    },
    stop() {
      relay.stop();
      stopControl?.();
      stopControl = null;
    },
  };
}
