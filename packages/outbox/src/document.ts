import { injectTraceContext, TRACEPARENT, tracingEnabled } from "@emailsvc/telemetry";
import type { IndexSpec, TenantDoc, TenantUpdate } from "@emailsvc/storage";

/** What every outbox entry has; a service adds what its effects need (topic, audit data, ...). */
export interface OutboxEntry {
  /** Unique per entry (`evt_…`): the event id of the events it implies, the key of its other effects. */
  id: string;
  /** When the change happened (ms). */
  at: number;
  /**
   * W3C `traceparent` of the request or event that made the change, while
   * tracing is on: its events carry it, so their consumers join that trace.
   */
  trace?: string;
}

/** The entries, each with the active trace context (while tracing is on). */
function traced<E extends OutboxEntry>(entries: E[]): E[] {
  if (!tracingEnabled()) return entries;
  const trace = injectTraceContext()[TRACEPARENT];
  return trace ? entries.map((entry) => (entry.trace ? entry : { ...entry, trace })) : entries;
}

/** The fields a document with an outbox carries beside its own. */
export interface OutboxFields<E extends OutboxEntry> {
  /** Bumped by every write that appends entries; guards the clear against a concurrent change. */
  version: number;
  /** Entries not carried out yet, oldest first. */
  outbox: E[];
  /** True while `outbox` holds entries (the sweep's index starts with it). */
  outbox_pending: boolean;
  /** Moved by every change: the sweep leaves an outbox younger than its grace to the write that made it. */
  updated_at: number;
}

/** A tenant's document with an outbox. */
export type OutboxDoc<E extends OutboxEntry = OutboxEntry> = TenantDoc & OutboxFields<E>;

/**
 * The sweep's index: pending outboxes of every tenant, oldest change first.
 * (A collection that already has an index beginning with `outbox_pending`
 * under this name keeps it: pending documents are few, either index serves.)
 */
export const OUTBOX_INDEX: IndexSpec = { name: "outbox_pending", fields: { outbox_pending: 1, updated_at: 1 } };

/** The outbox fields of a document inserted with its first entries. */
export function newOutbox<E extends OutboxEntry>(entries: E[]): { version: number; outbox: E[]; outbox_pending: boolean } {
  return { version: 1, outbox: traced(entries), outbox_pending: entries.length > 0 };
}

/**
 * A change's update with its outbox entries added: appended to `outbox`,
 * `outbox_pending` set, `version` bumped and `updated_at` moved to `now`, all
 * in the same single-document write as the change itself.
 */
export function withOutbox<D extends OutboxDoc<E>, E extends OutboxEntry>(
  update: TenantUpdate<D>,
  entries: E[],
  now: number,
): TenantUpdate<D> {
  // The update language is typed by the document; generic D cannot be checked
  // field by field here, and the fields named are OutboxFields' own.
  const u = update as {
    $set?: Record<string, unknown>;
    $push?: Record<string, unknown>;
    $inc?: Record<string, number>;
  };
  return {
    ...update,
    $set: { ...u.$set, updated_at: now, outbox_pending: true },
    $push: { ...u.$push, outbox: { $each: traced(entries) } },
    $inc: { ...u.$inc, version: 1 },
  } as TenantUpdate<D>;
}
