// The events a webhook endpoint can ask for, with what each says: one list,
// read by the webhooks service (which maps the platform's topics to them,
// services/webhooks/src/domain/event-types.ts) and by the gateway (its JSON
// schemas and OpenAPI document).

export const WEBHOOK_EVENT_TYPES = {
  "email.sent": "The relay (or the sandbox) accepted the email.",
  "email.delivered": "The provider reported the email delivered to the mailbox.",
  "email.deferred": "The receiving server asked to try later; the email is retried.",
  "email.bounced": "The email bounced; `reason` says why.",
  "email.complained": "The recipient reported the email as spam.",
  "email.failed": "The email will not be sent; `reason` is the stable code (e.g. `recipient_unsubscribed`).",
  "email.suppressed": "The email was not sent because the address is suppressed.",
  "subscriber.created": "A subscriber was created.",
  "subscriber.updated": "A subscriber's status (other than to unsubscribed) or tags changed; `changes` says what.",
  "subscriber.unsubscribed": "A subscriber's status became `unsubscribed`.",
  "subscriber.deleted": "A subscriber was erased.",
  "campaign.status_changed": "A campaign's status changed (`status`: scheduled, sending, paused, sent, cancelled, failed).",
} as const;

export type WebhookEventType = keyof typeof WEBHOOK_EVENT_TYPES;
export const WEBHOOK_EVENT_TYPE_NAMES = Object.keys(WEBHOOK_EVENT_TYPES) as WebhookEventType[];

export function isWebhookEventType(name: string): name is WebhookEventType {
  return Object.hasOwn(WEBHOOK_EVENT_TYPES, name);
}
