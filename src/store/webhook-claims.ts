import type { DeliveryRow } from "./webhooks.js";

// How a claim shares the due deliveries between owners (see `Store["webhooks"]["claim"]`), the
// parts SQLite's claim computes in the process (PostgreSQL's claim is one statement).

/** What a claim may take: see `Store["webhooks"]["claim"]`. */
export interface ClaimQuery {
  now: number;
  leaseUntil: number;
  /** The most deliveries claimed. */
  limit: number;
  /** How many sends an owner may have under way: its entry in `limits` (0: none claimed), else `perOwner`. */
  perOwner: number;
  limits?: ReadonlyMap<string | null, number>;
  /** The sends under way, by owner: they count against its limit. */
  busy?: ReadonlyMap<string | null, number>;
  /** Of the deliveries of these owners, at most `room` in all are claimed. */
  confined?: { owners: ReadonlySet<string | null>; room: number };
}

/** An owner as a claim's maps name it (null: the keyless server's), from its column value. */
export const ownerKey = (owner: string): string | null => (owner === "" ? null : owner);

/** The owners' rooms: each one's limit less what it has `busy`, the full ones left out. */
export function ownerRooms(
  owners: readonly string[],
  { perOwner, limits, busy }: Pick<ClaimQuery, "perOwner" | "limits" | "busy">,
): Map<string, number> {
  const rooms = new Map<string, number>();
  for (const owner of owners) {
    const key = ownerKey(owner);
    const room = (limits?.get(key) ?? perOwner) - (busy?.get(key) ?? 0);
    if (room > 0) rooms.set(owner, room);
  }
  return rooms;
}

/**
 * The claim from each owner's oldest due rows (`rank`: 0 for its oldest): each owner's first
 * before anyone's second, then the oldest; at most `limit`, and at most `confined.room` of the
 * confined owners' (the rest of theirs are skipped, not the others' after them).
 */
export function pickClaimed(
  candidates: readonly { row: DeliveryRow; rank: number }[],
  { limit, confined }: Pick<ClaimQuery, "limit" | "confined">,
): DeliveryRow[] {
  const picked: DeliveryRow[] = [];
  let confinedRoom = confined?.room ?? Number.POSITIVE_INFINITY;
  for (const { row } of [...candidates].sort((a, b) => a.rank - b.rank || dueOrder(a.row, b.row))) {
    if (picked.length >= limit) break;
    if (confined?.owners.has(ownerKey(row.owner))) {
      if (confinedRoom <= 0) continue;
      confinedRoom--;
    }
    picked.push(row);
  }
  return picked;
}

/** The oldest due first, then by id: the order of an owner's deliveries, and of owners' n-th ones, in a claim. */
export const dueOrder = (a: DeliveryRow, b: DeliveryRow): number =>
  (a.next_attempt_at ?? 0) - (b.next_attempt_at ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
