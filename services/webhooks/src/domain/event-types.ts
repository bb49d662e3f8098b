import { emailOutcomeId, emailOutcomesOf, type DecodedBatchEvent } from "@emailsvc/events";
import type { ConsumedTopic } from "@emailsvc/manifest";
import { SubscriberStatus, type WebhookEventType } from "@emailsvc/proto";

// How the platform's topics become the events an endpoint can ask for (their
// list: proto/webhook-event-types.ts). Payload data carries ids and what the event is about
// (a status, a reason), never an address, metadata or variables.

/**
 * Delivery's `email.status` values forwarded, by name: a status delivery does
 * not produce yet (delivered, deferred, bounced, complained) is forwarded as
 * soon as it appears on the topic. `queued` (the API's own answer) and `held`
 * (a paused campaign's internal state) are not events for integrators.
 */
export const EMAIL_STATUS_EVENTS: Readonly<Record<string, WebhookEventType>> = {
  sent: "email.sent",
  delivered: "email.delivered",
  deferred: "email.deferred",
  bounced: "email.bounced",
  complained: "email.complained",
  failed: "email.failed",
  suppressed: "email.suppressed",
};

/** One platform event as integrators see it: its type, when it happened, and its data. */
export interface WebhookEvent {
  tenant: string;
  /** The bus event's id; with the endpoint's, it makes the webhook-id. */
  eventId: string;
  type: WebhookEventType;
  occurredAt: number;
  data: Record<string, unknown>;
}

type Consumed = ConsumedTopic<"webhooks">;
type SourceEvent<T extends Consumed> = DecodedBatchEvent<T>;

const STATUS_NAMES: Partial<Record<SubscriberStatus, string>> = {
  [SubscriberStatus.ACTIVE]: "active",
  [SubscriberStatus.UNSUBSCRIBED]: "unsubscribed",
  [SubscriberStatus.BOUNCED]: "bounced",
  [SubscriberStatus.COMPLAINED]: "complained",
  [SubscriberStatus.PENDING]: "pending",
};

function base(e: { meta: { tenant: string; eventId: string; occurredAt: number } }, type: WebhookEventType, data: Record<string, unknown>): WebhookEvent {
  return { tenant: e.meta.tenant, eventId: e.meta.eventId, type, occurredAt: e.meta.occurredAt, data };
}

const orNull = (value: string) => (value === "" ? null : value);

/**
 * How an event of each consumed topic reads as webhook events (none: nothing
 * integrators are told about). A topic of the manifest's `consumes` without
 * its reader does not compile.
 */
export const READERS: { readonly [T in Consumed]: (e: SourceEvent<T>) => WebhookEvent | readonly WebhookEvent[] | undefined } = {
  // One webhook event per email of the event: a batch of a campaign's outcomes is as many as the events each
  // would have been, each with its own id (the batch's and the email's: a redelivered batch gives the same)
  // and time.
  "email.status": (e) => {
    const out: WebhookEvent[] = [];
    for (const outcome of emailOutcomesOf(e.message)) {
      const type = EMAIL_STATUS_EVENTS[outcome.status];
      if (!type) continue;
      out.push({
        tenant: e.meta.tenant,
        eventId: emailOutcomeId(e.message, e.meta.eventId, outcome),
        type,
        occurredAt: e.meta.occurredAt + outcome.afterMs,
        data: {
          email_id: outcome.emailId,
          // The recipient's address: filled in when the message is sent (withRecipient), never stored here.
          to: null,
          subscriber_id: orNull(outcome.subscriberId),
          campaign_id: orNull(outcome.campaignId),
          status: outcome.status,
          reason: orNull(outcome.reason),
        },
      });
    }
    return out;
  },
  "subscriber.created": (e) =>
    base(e, "subscriber.created", { subscriber_id: e.message.subscriberId, status: STATUS_NAMES[e.message.status] ?? null, tag_ids: [...e.message.tagIds] }),
  "subscriber.status_changed": (e) =>
    e.message.toStatus === "unsubscribed"
      ? base(e, "subscriber.unsubscribed", { subscriber_id: e.message.subscriberId, status: "unsubscribed", previous_status: e.message.fromStatus })
      : base(e, "subscriber.updated", {
          subscriber_id: e.message.subscriberId,
          status: e.message.toStatus,
          changes: { status: { from: e.message.fromStatus, to: e.message.toStatus } },
        }),
  "subscriber.tag_added": (e) => base(e, "subscriber.updated", { subscriber_id: e.message.subscriberId, changes: { tag_added: e.message.tagId } }),
  "subscriber.tag_removed": (e) => base(e, "subscriber.updated", { subscriber_id: e.message.subscriberId, changes: { tag_removed: e.message.tagId } }),
  "subscriber.deleted": (e) => base(e, "subscriber.deleted", { subscriber_id: e.message.subscriberId }),
  "campaign.status_changed": (e) => base(e, "campaign.status_changed", { campaign_id: e.message.campaignId, status: e.message.status }),
};

/**
 * An email event's body with its recipient's address (`data.to`), as it goes
 * out: the stored payload holds null there, so the address is read from
 * delivery at each attempt and an erasure (delivery scrubs the email) leaves
 * nothing of it here.
 */
export function withRecipient(payload: string, to: string | null): string {
  const body = JSON.parse(payload) as { data: Record<string, unknown> };
  body.data.to = to;
  return JSON.stringify(body);
}

/** The JSON body sent for an event: `{type, timestamp, data}` (Standard Webhooks' recommended shape). */
export function payloadOf(event: Pick<WebhookEvent, "type" | "occurredAt" | "data">): string {
  return JSON.stringify({ type: event.type, timestamp: new Date(event.occurredAt).toISOString(), data: event.data });
}
