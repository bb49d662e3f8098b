import { WEBHOOK_EVENT_TYPE_NAMES, WEBHOOK_EVENT_TYPES } from "@emailsvc/proto";
import type { FromSchema } from "json-schema-to-ts";
import { bodyErrors, body, errors, json, noContent, nullableTimestamp, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// Webhooks' part of the OpenAPI document; body types are derived from the
// schemas, the event types from their one list (proto/webhook-event-types.ts).

const EVENT_LIST = WEBHOOK_EVENT_TYPE_NAMES.map((name) => `\`${name}\` (${WEBHOOK_EVENT_TYPES[name]})`).join("; ");

const url = {
  type: "string",
  minLength: 1,
  maxLength: 2048,
  description:
    "Where events are POSTed: an https URL (http only where the operator allows it). A URL naming a loopback, private, link-local, CGNAT, metadata, multicast or unspecified address is a 400 `webhook_url_forbidden`; a host name is checked on every attempt, after DNS resolution. Redirects are not followed.",
} as const;
const events = {
  type: "array",
  minItems: 1,
  maxItems: 50,
  items: { type: "string", minLength: 1, maxLength: 100 },
  description: `The event types to send, or \`["*"]\` for every type (also types added later). An unknown type is a 400 naming it. Types: ${EVENT_LIST}.`,
} as const;
const description = { type: "string", maxLength: 500 } as const;

export const WebhookCreate = {
  type: "object",
  additionalProperties: false,
  required: ["url", "events"],
  properties: { url, events, description: { ...description, default: "" } },
} as const;
export type WebhookCreateBody = FromSchema<typeof WebhookCreate>;

export const WebhookUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description:
    "Any of the fields; fields left out keep their value. `is_active: false` stops sending (deliveries due meanwhile fail with `endpoint_disabled` and can be replayed); `is_active: true` turns it on again and clears `disabled_reason`.",
  properties: { url, events, description, is_active: { type: "boolean" } },
} as const;
export type WebhookUpdateBody = FromSchema<typeof WebhookUpdate>;

const webhookProperties = {
  id: { type: "string", readOnly: true, examples: ["whk_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
  url: { type: "string" },
  events: { type: "array", items: { type: "string" } },
  description: { type: "string" },
  is_active: { type: "boolean", description: "A new endpoint is active." },
  disabled_reason: {
    type: ["string", "null"],
    enum: ["failing", null],
    description:
      "Why the platform turned the endpoint off, or null: `failing` when every attempt to it failed for `WEBHOOK_DISABLE_AFTER_SECONDS` (default 5 days). Setting `is_active` again clears it.",
  },
  disabled_at: nullableTimestamp("When the platform turned it off (RFC 3339, UTC), or null."),
  created_at: timestamp("When the endpoint was created (RFC 3339, UTC)."),
  updated_at: timestamp("When the endpoint last changed (RFC 3339, UTC)."),
  previous_secret_expires_at: nullableTimestamp(
    "After a rotation: until when the previous secret still signs beside the new one (a second `v1,` signature), or null.",
  ),
} as const;
const webhookRequired = Object.keys(webhookProperties);

const attempt = {
  type: "object",
  additionalProperties: false,
  required: ["at", "response_code", "duration_ms", "error"],
  properties: {
    at: timestamp("When the attempt was made (RFC 3339, UTC)."),
    response_code: { type: ["integer", "null"], description: "The endpoint's HTTP status, or null when it did not answer." },
    duration_ms: { type: "integer", minimum: 0 },
    error: { type: ["string", "null"], description: "What went wrong (e.g. `redirect not followed (302)`), or null." },
  },
} as const;

export const schemas: Record<string, JsonSchema> = {
  Webhook: { type: "object", additionalProperties: false, required: webhookRequired, properties: webhookProperties },
  WebhookWithSecret: {
    type: "object",
    additionalProperties: false,
    required: [...webhookRequired, "secret"],
    properties: {
      ...webhookProperties,
      secret: {
        type: "string",
        pattern: "^whsec_[A-Za-z0-9+/]{32,}={0,2}$",
        description: "The signing secret (Standard Webhooks, `whsec_` and base64). Shown only here: store it now.",
      },
    },
  },
  WebhookCreate,
  WebhookUpdate,
  WebhookPage: page("Webhook", "A page of webhook endpoints, oldest first."),
  WebhookDelivery: {
    type: "object",
    additionalProperties: false,
    required: ["id", "event_type", "state", "attempts", "response_code", "duration_ms", "error", "attempted_at", "next_attempt_at", "created_at", "attempt_log"],
    properties: {
      id: { type: "string", description: "The `webhook-id` header: the same on every attempt and replay.", examples: ["msg_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      event_type: { type: "string" },
      state: { type: "string", enum: ["pending", "delivered", "failed"], description: "`pending`: waiting for its next attempt; `failed`: retried for 3 days (WEBHOOK_RETRY_FOR_SECONDS) and given up, or the endpoint was off." },
      attempts: { type: "integer", minimum: 0 },
      response_code: { type: ["integer", "null"], description: "The last attempt's HTTP status, or null (no attempt yet, or no answer)." },
      duration_ms: { type: ["integer", "null"], description: "How long the last attempt took, or null." },
      error: { type: ["string", "null"], description: "What went wrong in the last attempt, or null." },
      attempted_at: nullableTimestamp("When the last attempt was made, or null."),
      next_attempt_at: nullableTimestamp("When it is tried next, or null (delivered or failed)."),
      created_at: timestamp("When the event was recorded for this endpoint (RFC 3339, UTC)."),
      attempt_log: { type: "array", items: attempt, description: "The latest attempts (up to 20), oldest first." },
    },
  },
  WebhookDeliveryPage: page("WebhookDelivery", "A page of an endpoint's deliveries, newest first."),
};

// What arrives at an endpoint: the body of each event type, by the family of its data.
const nullableId = (description: string) => ({ type: ["string", "null"], description }) as const;
const EMAIL_DATA = {
  type: "object",
  required: ["email_id", "to", "subscriber_id", "campaign_id", "status", "reason"],
  properties: {
    email_id: { type: "string", examples: ["eml_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
    to: { type: ["string", "null"], description: "The recipient's address, as you sent to it (null once the email was erased)." },
    subscriber_id: nullableId("The subscriber it went to, if any."),
    campaign_id: nullableId("The campaign it belongs to, if any."),
    status: { type: "string", description: "The email's status (sent, delivered, deferred, bounced, complained, failed, suppressed)." },
    reason: { type: ["string", "null"], description: "Why, as a stable code (e.g. `recipient_unsubscribed`), or null." },
  },
} as const;
const SUBSCRIBER_DATA = {
  type: "object",
  required: ["subscriber_id"],
  properties: {
    subscriber_id: { type: "string", examples: ["sub_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
    status: { type: ["string", "null"], description: "The subscriber's status after the change (created, updated, unsubscribed)." },
    previous_status: { type: "string", description: "subscriber.unsubscribed: the status before." },
    tag_ids: { type: "array", items: { type: "string" }, description: "subscriber.created: the tags it was created with." },
    changes: {
      type: "object",
      description: "subscriber.updated: what changed.",
      properties: {
        status: { type: "object", properties: { from: { type: "string" }, to: { type: "string" } } },
        tag_added: { type: "string", description: "A tag id." },
        tag_removed: { type: "string", description: "A tag id." },
      },
    },
  },
} as const;
const CAMPAIGN_DATA = {
  type: "object",
  required: ["campaign_id", "status"],
  properties: { campaign_id: { type: "string" }, status: { type: "string", enum: ["scheduled", "sending", "paused", "sent", "cancelled", "failed"] } },
} as const;

const webhookHeaders: ParameterObject[] = [
  { name: "webhook-id", in: "header", required: true, description: "The message's id: the same on every retry and replay (deduplicate by it).", schema: { type: "string" } },
  { name: "webhook-timestamp", in: "header", required: true, description: "Unix seconds when this attempt was signed.", schema: { type: "string", pattern: "^[0-9]+$" } },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    description: "`v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<body>\">` per signing secret, space-separated (two during the 24 h after a rotation). Verify with a Standard Webhooks library.",
    schema: { type: "string" },
  },
];

/** One documented request per event type, sent to the endpoints that asked for it. */
export const webhooks: Paths = Object.fromEntries(
  WEBHOOK_EVENT_TYPE_NAMES.map((type) => {
    const data = type.startsWith("email.") ? EMAIL_DATA : type.startsWith("subscriber.") ? SUBSCRIBER_DATA : CAMPAIGN_DATA;
    return [
      type,
      {
        post: {
          operationId: `webhook_${type.replace(/\./g, "_")}`,
          summary: type,
          description: WEBHOOK_EVENT_TYPES[type],
          tags: ["Webhooks"],
          security: [],
          parameters: webhookHeaders,
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["type", "timestamp", "data"],
                  properties: { type: { const: type }, timestamp: { type: "string", format: "date-time", description: "When the event happened." }, data },
                },
              },
            },
          },
          responses: { "2XX": { description: "Received. Any other answer, or none within 10 s, is retried; a 3xx is not followed." } },
        },
      },
    ];
  }),
);

export const parameters: Record<string, ParameterObject> = {
  WebhookId: pathParam("id", "The webhook endpoint's id."),
  WebhookDeliveryId: pathParam("delivery_id", "The delivery's id (its `webhook-id`)."),
};

export const paths: Paths = {
  "/api/v1/webhooks": {
    post: {
      operationId: "createWebhook",
      summary: "Create a webhook endpoint",
      description:
        "Active at once: each later event of a type it asks for is POSTed to it, signed as the Standard Webhooks specification says (`webhook-id`, `webhook-timestamp`, `webhook-signature`). The answer holds the signing secret, shown this once. An account has at most 20 endpoints per mode (409 `webhook_limit_reached`).",
      tags: ["Webhooks"],
      requestBody: body("WebhookCreate"),
      responses: { "201": json(ref("WebhookWithSecret"), "The new endpoint, with its secret."), ...errors(...bodyErrors, "Conflict", ...serviceErrors) },
    },
    get: {
      operationId: "listWebhooks",
      summary: "List webhook endpoints",
      tags: ["Webhooks"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("WebhookPage"), "A page of endpoints (never their secrets)."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/webhooks/{id}": {
    get: {
      operationId: "getWebhook",
      summary: "Get a webhook endpoint",
      tags: ["Webhooks"],
      parameters: [param("WebhookId")],
      responses: { "200": json(ref("Webhook"), "The endpoint (never its secret)."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateWebhook",
      summary: "Change a webhook endpoint",
      tags: ["Webhooks"],
      parameters: [param("WebhookId")],
      requestBody: body("WebhookUpdate"),
      responses: { "200": json(ref("Webhook"), "The changed endpoint."), ...errors(...bodyErrors, "NotFound", ...serviceErrors) },
    },
    delete: {
      operationId: "deleteWebhook",
      summary: "Delete a webhook endpoint",
      tags: ["Webhooks"],
      parameters: [param("WebhookId")],
      responses: { "204": noContent("Deleted, with its delivery log; nothing more is sent to it."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/webhooks/{id}/rotate-secret": {
    post: {
      operationId: "rotateWebhookSecret",
      summary: "Rotate a webhook endpoint's secret",
      description:
        "A new secret, shown this once. For 24 hours the previous one keeps signing beside it (each message carries both signatures, space-separated), so a verifier can switch without missing a message.",
      tags: ["Webhooks"],
      parameters: [param("WebhookId")],
      responses: { "200": json(ref("WebhookWithSecret"), "The endpoint, with its new secret."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/webhooks/{id}/deliveries": {
    get: {
      operationId: "listWebhookDeliveries",
      summary: "An endpoint's delivery log",
      description: "Each message sent (or to be sent) to the endpoint, newest first: its `webhook-id`, event type, attempts with their response codes and durations, and the next attempt.",
      tags: ["Webhooks"],
      parameters: [param("WebhookId"), param("Limit"), param("Cursor")],
      responses: { "200": json(ref("WebhookDeliveryPage"), "A page of deliveries."), ...errors("BadRequest", "NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/webhooks/{id}/deliveries/{delivery_id}/replay": {
    post: {
      operationId: "replayWebhookDelivery",
      summary: "Send a delivery again",
      description:
        "Sends the message again now, with the same `webhook-id` and body (a receiver that deduplicates by id sees the same message), whatever its state; it is then retried as a new message would be.",
      tags: ["Webhooks"],
      parameters: [param("WebhookId"), param("WebhookDeliveryId")],
      responses: { "200": json(ref("WebhookDelivery"), "The delivery, due now."), ...errors("NotFound", ...serviceErrors) },
    },
  },
};
