import { z } from "zod";
import { type Plan, PlanSchema } from "../agent/plan.js";
import type { RunView } from "../domain/run.js";
import { countWithin, jsonBytes } from "../store/page.js";
import { runView } from "../store/runs.js";
import type { RunRecord, Store } from "../store/store.js";

/** A `plan.updated` event as stored: the plan it announced (its other fields are not needed). */
const PlanEvent = z.object({ plan: PlanSchema });

/** A bound above any stored event's size (PostgreSQL's INTEGER): the plan is read whatever its size. */
const WHOLE = 2 ** 31 - 1;

/**
 * A run's plan: the one its last `plan.updated` event announced, read from that event alone (one
 * probe of an index, not the run's messages). Every change of a plan is so announced: a plan
 * changes only when a plan tool's successful result is committed, and the loop writes that
 * result and the event in one write (src/runs/execution.ts), tool calls one after another in
 * the model's order; the results the host writes itself (aborted, interrupted, denied, lost)
 * are errors, which change no plan. So the last event's plan is the plan the run's committed
 * messages give (planFromMessages), across restarts and on any instance. Null for a run
 * without planning, or that made no plan.
 */
export async function planOfRun(store: Store, record: RunRecord): Promise<Plan | null> {
  if (!record.planning) return null;
  const event = await store.events.lastPlan(record.id, WHOLE);
  return event?.data ? PlanEvent.parse(JSON.parse(event.data)).plan : null;
}

/** A run as stored, with its plan; null when there is no such run. */
export async function storedRunView({ store, runId }: { store: Store; runId: string }): Promise<RunView | null> {
  const record = await store.runs.get(runId);
  if (!record) return null;
  return runView(record, await planOfRun(store, record));
}

/**
 * Views of a page of runs, in its order, as many as a page of `bytes` holds with their plans:
 * the sizes of the runs' last plan events are read first (not their JSON), then the plans of
 * the runs that fit, so a page reads no more plans than it can show. At least one run.
 */
export async function runViewsWithin(store: Store, records: readonly RunRecord[], bytes: number): Promise<RunView[]> {
  const sizes = await Promise.all(
    records.map(async (r) => {
      const plan = r.planning ? await store.events.lastPlan(r.id, 0) : null;
      return jsonBytes(runView(r, null)) + (plan?.bytes ?? 0);
    }),
  );
  const kept = records.slice(0, countWithin(sizes, bytes));
  return Promise.all(kept.map(async (r) => runView(r, await planOfRun(store, r))));
}
