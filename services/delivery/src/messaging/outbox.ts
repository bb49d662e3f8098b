import { encodeEvent, type EncodedEvent, type EventBus, type Topic } from "@emailsvc/events";
import { OutboxRelay, withOutbox, type RelayPass } from "@emailsvc/outbox";
import { newId } from "@emailsvc/ids";
import { type Logger } from "@emailsvc/telemetry";
import type { CrossTenantCollection } from "@emailsvc/storage";
import { delivery } from "@emailsvc/proto";
import { failureReasonOf, type EmailDoc, type OutboxEntry, type PausedCampaignDoc } from "../storage/documents.js";
import type { DeliveryStorage } from "../storage/repositories.js";
import type { DeliveryProblem, DeliveryProblemSink } from "../domain/recipients.js";

export interface DeliveryOutboxOptions {
  storage: DeliveryStorage;
  bus: EventBus;
  logger: Logger;
  clock: () => number;
  /** How often the sweeps run (default 2 s). */
  sweepIntervalMs?: number;
  /** A pending outbox younger than this is left to the write that made it (default 5 s). */
  sweepGraceMs?: number;
  /** Where bounces and complaints are reported (the subscribers service); none: nobody is told (tests, a lone delivery). */
  problems?: DeliveryProblemSink | undefined;
  /** See requeueStalled (default 10 minutes); also how long a retry asked for may wait for its attempt before it is asked for again. */
  stalledAfterMs?: number;
  /** More timed work run after each sweep (the sending domains' re-check). */
  passes?: RelayPass[];
}

/**
 * The relay of emails' outboxes (@emailsvc/outbox): each entry is one event
 * keyed by the email id, by ids and the status only (never the address,
 * variables or content). The stalled-mail sweep runs after each outbox sweep.
 */
export function deliveryOutbox(options: DeliveryOutboxOptions): OutboxRelay<EmailDoc> {
  const relay: OutboxRelay<EmailDoc> = new OutboxRelay<EmailDoc>({
    documents: options.storage.outboxSweep(),
    bus: options.bus,
    logger: options.logger,
    name: "delivery",
    clock: options.clock,
    // A send request before the status it goes with, when one flush publishes both.
    topicOrder: ["email.send.requested"],
    // A bounce or complaint is reported to the subscribers service before its event is published: until it
    // has taken it (idempotent per email), the entry stays pending and the sweep tries again.
    effect: async (doc, entry) => {
      const problem = entry.topic === "email.status" ? problemOf(doc, entry.status) : undefined;
      if (problem && options.problems && doc.to) await options.problems.record(doc.tenant, { email: doc.to, problem, emailId: doc._id });
    },
    events: (doc, entry) => {
      const origin = { eventId: entry.id, tenant: doc.tenant, occurredAt: entry.at };
      return [
        entry.topic === "email.send.requested"
          ? encodeEvent("email.send.requested", origin, sendRequest(doc))
          : encodeEvent("email.status", origin, statusEvent(doc, entry.status ?? doc.status)),
      ];
    },
    sweepIntervalMs: options.sweepIntervalMs,
    sweepGraceMs: options.sweepGraceMs,
    passes: [
      {
        name: "stalled-mail sweep",
        run: () => requeueStalled(options.storage.stalledSweep(), relay, options, options.storage.pausedCampaignsOfAll()),
      },
      ...(options.passes ?? []),
      {
        name: "retry sweep",
        run: () => requestDueRetries(options.storage.retrySweep(), relay, options),
      },
    ],
  });
  return relay;
}

/** What a status change teaches about the address: a bounce (by its type) or a complaint. */
function problemOf(doc: EmailDoc, status: OutboxEntry["status"]): DeliveryProblem | undefined {
  if (status === "complained") return "complaint";
  if (status !== "bounced") return undefined;
  return doc.bounce?.type === "soft" ? "soft_bounce" : "hard_bounce";
}

/**
 * An email.send.requested body for a stored email: its id; for a campaign's
 * email (the stalled sweep asking again) also the campaign's fields, so that
 * it goes through the campaign intake and its cancel and pause checks.
 */
function sendRequest(doc: EmailDoc) {
  if (!doc.campaign_id || !doc.subscriber_id) return { emailId: doc._id };
  return { emailId: doc._id, campaignId: doc.campaign_id, subscriberId: doc.subscriber_id, templateId: doc.template_id, templateVersion: doc.template_version };
}

/**
 * An email.status body: ids, the status and, for a failure, a suppression or
 * a bounce, its reason (the enum consumers read, and its code as text; never
 * the relay's reply), and a bounce's type.
 */
export function statusEvent(
  doc: Pick<EmailDoc, "_id" | "subscriber_id" | "campaign_id" | "error" | "failure_reason" | "bounce">,
  status: string,
): {
  emailId: string;
  status: string;
  subscriberId: string;
  campaignId: string;
  reason: string;
  failureReason: delivery.FailureReason;
  bounceType: string;
} {
  const reason = status === "failed" || status === "suppressed" || status === "bounced" ? failureReasonOf({ ...doc, status }) : undefined;
  return {
    emailId: doc._id,
    status,
    subscriberId: doc.subscriber_id ?? "",
    campaignId: doc.campaign_id ?? "",
    reason: reason ?? "",
    failureReason: delivery.failureReasonOfCode(reason),
    bounceType: status === "bounced" ? (doc.bounce?.type ?? "") : "",
  };
}

/** A campaign email's outcome as a batch on `email.status` holds it: statusEvent's body and when (ms after its tenant's first). */
type GatheredOutcome = ReturnType<typeof statusEvent> & { afterMs: number };

/**
 * Outcomes of one batch's email.status event at most: with 256 to a publish
 * (the send consumer's, at the default concurrency), one event a tenant per
 * publish; about 30 KB, far below a Kafka record's or a pack's bound.
 */
export const OUTCOMES_PER_EVENT = 256;

/**
 * Campaign emails' outcomes gathered for email.status (sent, failed,
 * suppressed, held, and those the intake says again): taken as one event of
 * up to OUTCOMES_PER_EVENT outcomes per tenant (`outcomes` of
 * EmailStatusChanged, keyed by the first email id), or, with `batches` off
 * (EMAIL_STATUS_BATCHES=off, for a rolling upgrade whose consumers still
 * read the one-email form only), one event each as before batches. Bounces and
 * every email outside campaigns keep their own event from the outbox.
 */
export class CampaignOutcomes {
  private readonly byTenant = new Map<string, { at: number; outcomes: GatheredOutcome[] }>();
  /** Outcomes gathered and not yet taken. */
  size = 0;

  constructor(
    private readonly now: () => number,
    private readonly batches = true,
  ) {}

  add(tenant: string, doc: Parameters<typeof statusEvent>[0], status: string): void {
    const at = this.now();
    let gathered = this.byTenant.get(tenant);
    if (!gathered) this.byTenant.set(tenant, (gathered = { at, outcomes: [] }));
    const outcome = statusEvent(doc, status) as GatheredOutcome;
    // Whole ms (a uint32); the clock may step back: an outcome is never before its batch's time.
    outcome.afterMs = Math.max(0, Math.round(at - gathered.at));
    gathered.outcomes.push(outcome);
    this.size++;
  }

  /** The events of the outcomes gathered, which are then forgotten. */
  take(): EncodedEvent[] {
    const events: EncodedEvent[] = [];
    for (const [tenant, { at, outcomes }] of this.byTenant) {
      if (!this.batches) {
        for (const { afterMs, ...body } of outcomes) events.push(encodeEvent("email.status", { eventId: newId("evt"), tenant, occurredAt: at + afterMs }, body));
        continue;
      }
      for (let i = 0; i < outcomes.length; i += OUTCOMES_PER_EVENT) {
        const chunk = outcomes.slice(i, i + OUTCOMES_PER_EVENT);
        // A later event's time is its first outcome's, as the first event's is.
        const start = chunk[0]!.afterMs;
        if (start > 0) for (const outcome of chunk) outcome.afterMs = Math.max(0, outcome.afterMs - start);
        events.push(encodeEvent("email.status", { eventId: newId("evt"), tenant, occurredAt: at + start }, { outcomes: chunk }));
      }
    }
    this.byTenant.clear();
    this.size = 0;
    return events;
  }
}

/** Paused campaigns the stalled sweep reads at most per pass (beyond, their emails are asked for again, as before). */
const PAUSED_PER_SWEEP = 10_000;

/**
 * Gives queued emails of every tenant that nothing is happening to a fresh
 * send request: no lease held, nothing pending, untouched for
 * `stalledAfterMs`. A safety net: both buses keep their events across a
 * restart and a crashed attempt's lease runs out within seconds, so queued mail
 * does not wait for this. The request is written to the outbox first (guarded
 * by version), then published. Resolves how many emails it requested again.
 *
 * Emails of a paused campaign are left alone: they are held on purpose
 * (deliver-email.ts, `hold`), and asking again would only hold them again, a
 * warning, an intake pass and a recipient lookup each, every `stalledAfterMs`
 * for as long as the pause lasts. Campaigns hands them over again on resume
 * (a lost `held` answer included: it hands over again what it has queued); a
 * campaign cancelled while paused is no longer paused, so its held emails are
 * asked for here once more and fail `campaign_cancelled`.
 */
export async function requeueStalled(
  emails: CrossTenantCollection<EmailDoc>,
  relay: OutboxRelay<EmailDoc>,
  options: Pick<DeliveryOutboxOptions, "clock" | "logger" | "stalledAfterMs">,
  paused?: CrossTenantCollection<PausedCampaignDoc>,
): Promise<number> {
  const now = options.clock();
  // Campaign ids are unique across tenants, so one list serves every tenant's emails.
  const pausedIds = paused ? (await paused.find({}, { limit: PAUSED_PER_SWEEP })).map((doc) => doc._id) : [];
  const stalled = await emails.find(
    {
      status: "queued",
      updated_at: { $lt: now - (options.stalledAfterMs ?? 10 * 60_000) },
      ...(pausedIds.length > 0 ? { campaign_id: { $nin: pausedIds } } : {}),
    },
    { limit: 100 },
  );
  let requeued = 0;
  for (const doc of stalled) {
    if (doc.outbox_pending || doc.lease_until > now) continue;
    const entry: OutboxEntry = { id: newId("evt"), topic: "email.send.requested", at: now };
    // `$ne: true`, not `false`: a record whose outbox never held an entry leaves the field out (storage/documents.ts, EMAIL_DEFAULTS).
    const updated = await emails
      .forTenant(doc.tenant)
      .updateOne({ _id: doc._id, version: doc.version, status: "queued", outbox_pending: { $ne: true } }, withOutbox<EmailDoc, OutboxEntry>({}, [entry], now));
    if (!updated) continue;
    requeued++;
    options.logger.warn({ email_id: doc._id }, "stalled email: send requested again");
    await relay.flush(updated);
  }
  return requeued;
}

/** Deferred emails the retry sweep asks for at most per pass (the rest at the next pass, 2 s later). */
const RETRIES_PER_SWEEP = 100;

/**
 * Asks again for the deferred emails of every tenant whose next attempt is
 * due: each gets `retry_requested` (the one mark a claim of a deferred email
 * accepts, see usecases/lease.ts) and a send request in its outbox, in one
 * write guarded by its version, then published. Its `next_attempt_at` moves
 * `stalledAfterMs` ahead: should that request be lost, it is asked for again
 * then. So a deferred email waits in the store, not on the bus, and holds up
 * no other mail. Resolves how many it asked for.
 */
export async function requestDueRetries(
  emails: CrossTenantCollection<EmailDoc>,
  relay: OutboxRelay<EmailDoc>,
  options: Pick<DeliveryOutboxOptions, "clock" | "logger" | "stalledAfterMs">,
): Promise<number> {
  const now = options.clock();
  const due = await emails.find({ status: "deferred", next_attempt_at: { $lte: now } }, { sort: { next_attempt_at: 1 }, limit: RETRIES_PER_SWEEP });
  let requested = 0;
  for (const doc of due) {
    if (doc.outbox_pending || doc.lease_until > now) continue;
    const entry: OutboxEntry = { id: newId("evt"), topic: "email.send.requested", at: now };
    // `$ne: true` as in requeueStalled: a deferred campaign email's outbox never held an entry.
    const updated = await emails.forTenant(doc.tenant).updateOne(
      { _id: doc._id, version: doc.version, status: "deferred", outbox_pending: { $ne: true } },
      withOutbox<EmailDoc, OutboxEntry>({ $set: { retry_requested: true, next_attempt_at: now + (options.stalledAfterMs ?? 10 * 60_000) } }, [entry], now),
    );
    if (!updated) continue;
    requested++;
    await relay.flush(updated);
  }
  return requested;
}
