import type { FromSchema } from "json-schema-to-ts";
import {
  bodyErrors,
  body,
  errors,
  json,
  lineText,
  nullableTimestamp,
  page,
  param,
  pathParam,
  ref,
  serviceErrors,
  timestamp,
} from "../../openapi/kit.js";
import { emailAddress } from "../../openapi/common.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";
import { slug, variables } from "../templates/schemas.js";

// Emails' part of the OpenAPI document; body types are derived from the schemas.

/** Longest idempotency key (as Stripe's). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** How long the delivery service keeps an idempotency key at least; stated in the document. */
export const IDEMPOTENCY_KEY_RETENTION_HOURS = 24;

/** Printable ASCII, no space at either end (the delivery service's rule), as header and body field alike. */
const idempotencyKey = {
  type: "string",
  minLength: 1,
  maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
  pattern: "^[\\x21-\\x7e](?:[\\x20-\\x7e]*[\\x21-\\x7e])?$",
  "x-pattern-message": `is 1-${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters, not starting or ending with a space`,
} as const;

export const EMAIL_STATUSES = ["queued", "sent", "delivered", "deferred", "bounced", "complained", "failed", "suppressed"] as const;

export const EmailSend = {
  type: "object",
  additionalProperties: false,
  required: ["template_slug", "to"],
  properties: {
    template_slug: { ...slug, description: "The `slug` of the template to send." },
    to: { ...emailAddress, description: `The one recipient's address. ${emailAddress.description}` },
    variables,
    from: {
      type: "object",
      additionalProperties: false,
      required: ["email"],
      description:
        "Optional sender, e.g. `{\"email\": \"hello@example.com\", \"name\": \"Example\"}`; left out: the platform's `EMAIL_FROM`. In live mode its domain must be a verified sending domain of the account (POST /api/v1/domains), else 422 `from_domain_not_verified` and nothing is stored; test mode may use any. Mail From a sending domain of the account is DKIM-signed with its key.",
      properties: {
        email: { ...emailAddress, description: "The From address." },
        name: { ...lineText(100, "must show something and hold no control characters or line breaks"), description: "The display name (1-100 characters, no line breaks)." },
      },
    },
    reply_to: { ...emailAddress, description: "Optional Reply-To address; left out: none." },
    idempotency_key: {
      ...idempotencyKey,
      description:
        "Optional; the same as the `Idempotency-Key` header (give either, or both with one value: different values are a 400). 1-255 printable ASCII characters, not starting or ending with a space.",
    },
  },
} as const;
export type EmailSendBody = FromSchema<typeof EmailSend>;

/** Most messages one batch takes (Postmark's batch size; Resend takes 100). */
export const MAX_BATCH_MESSAGES = 500;

/** Largest body of a batch: 500 messages of about 16 KiB each (a single send's body may be 256 KiB). */
export const BATCH_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

const emailId = (): JsonSchema => ({ type: "string", readOnly: true, examples: ["eml_01jd3x0k8m7y6t5r4q3p2n1m0k"] });

export const schemas: Record<string, JsonSchema> = {
  EmailStatus: {
    type: "string",
    enum: EMAIL_STATUSES,
    description:
      "`queued` (accepted, not sent yet), `sent` (the provider took it), `deferred` (the relay answered \"not now\" or could not be reached: tried again at `next_attempt_at`, with backoff, for up to 72 hours), `bounced` (refused for good: `bounce.type` `hard` for a 5xx, `soft` when the retries of a deferred email ran out; the address is then suppressed), `failed` (could not be sent; see `error`), `suppressed` (not sent: the recipient may not get this mail; `error` says why), `delivered` and `complained` (where the provider or the recipient reports them).",
  },
  EmailBounce: {
    type: ["object", "null"],
    additionalProperties: false,
    required: ["type", "diagnostic"],
    description: "Why the email bounced; null unless `bounced`.",
    properties: {
      type: { type: "string", enum: ["hard", "soft"], description: "`hard`: refused for good (5xx); `soft`: \"not now\" (4xx) until the retries ran out." },
      diagnostic: { type: "string", description: "The relay's reply (addresses replaced by `<recipient>`), e.g. `550 5.1.1 <recipient>: User unknown`." },
    },
  },
  EmailStatusChange: {
    type: "object",
    additionalProperties: false,
    required: ["status", "at", "detail"],
    properties: {
      status: ref("EmailStatus"),
      at: timestamp("When the email took this status (RFC 3339, UTC)."),
      detail: {
        type: "string",
        description: "The relay's reply for `deferred` and `bounced`, the reason's code for `suppressed` and `failed`; otherwise empty.",
      },
    },
  },
  EmailSend,
  EmailBatch: {
    type: "array",
    minItems: 1,
    maxItems: MAX_BATCH_MESSAGES,
    description: `1-${MAX_BATCH_MESSAGES} messages, each an \`EmailSend\` (what POST /api/v1/emails/send takes, with its own \`idempotency_key\`). Each message is checked on its own: one that breaks \`EmailSend\` gets a 400 \`validation_failed\` in its entry of the answer, and the others go on.`,
    items: { type: "object", description: "An `EmailSend`." },
  },
  EmailBatchEntry: {
    type: "object",
    additionalProperties: false,
    required: ["index", "status", "email", "replayed", "error"],
    description:
      "One message's outcome, in the place of the message. `status` is what POST /api/v1/emails/send would have answered for this message alone: 202 (accepted: `email` is the email as queued, or `suppressed` with its reason when its recipient may not get this mail), or an error status with `error` the problem it would have answered (its `code` the same: 400 `validation_failed`, 404 `template_not_found`, 409 `idempotency_key_reused`, 422 `from_domain_not_verified`, 429 `test_mode_quota_exceeded`, 503 `templates_unavailable`, …).",
    properties: {
      index: { type: "integer", minimum: 0, description: "The message's position in the request, from 0." },
      status: { type: "integer", description: "202, or the error's HTTP status." },
      email: { anyOf: [ref("EmailQueued"), { type: "null" }], description: "The email as accepted; null for an error." },
      replayed: { type: "boolean", description: "True when the message's idempotency key was used before (in an earlier request, or earlier in this batch) with the same message: no new email, the original one is answered." },
      error: { anyOf: [ref("Problem"), { type: "null" }], description: "Why the message was not accepted; null when it was. Its `request_id` is the batch's." },
    },
  },
  EmailBatchResult: {
    type: "object",
    additionalProperties: false,
    required: ["accepted", "failed", "results"],
    properties: {
      accepted: { type: "integer", minimum: 0, description: "Entries with status 202 (queued, refused for their recipient, or replayed)." },
      failed: { type: "integer", minimum: 0, description: "Entries with an error." },
      results: { type: "array", items: ref("EmailBatchEntry"), description: "One entry per message, in the request's order." },
    },
  },
  EmailQueued: {
    type: "object",
    additionalProperties: false,
    description:
      "The email as it was accepted: `queued`, or `suppressed` when its recipient may not get this mail (refused at once; `error` says why). A replay answers with this same body, whatever happened to the email since; read its current state with GET /api/v1/emails/{id}.",
    required: ["id", "status", "to", "template_id", "template_slug", "template_version", "idempotency_key", "queued_at", "error"],
    properties: {
      id: emailId(),
      status: { type: "string", enum: ["queued", "suppressed"] },
      error: {
        type: ["string", "null"],
        description:
          "null when queued; when refused, why: `recipient_unsubscribed`, `recipient_bounced`, `recipient_complained` or `recipient_suppressed` (see Email.error).",
      },
      to: { type: "string", format: "email" },
      template_id: { type: "string" },
      template_slug: { type: "string" },
      template_version: { type: "integer", minimum: 1, description: "The template version it is sent with." },
      idempotency_key: { type: ["string", "null"] },
      queued_at: timestamp("When the email was accepted (RFC 3339, UTC)."),
    },
  },
  Email: {
    type: "object",
    additionalProperties: false,
    required: [
      "id",
      "status",
      "to",
      "template_id",
      "template_slug",
      "template_version",
      "idempotency_key",
      "provider",
      "message_id",
      "provider_message_id",
      "error",
      "attempts",
      "queued_at",
      "sent_at",
      "failed_at",
      "updated_at",
      "bounce",
      "history",
      "next_attempt_at",
    ],
    properties: {
      id: emailId(),
      status: ref("EmailStatus"),
      to: {
        type: ["string", "null"],
        format: "email",
        description: "The recipient; null once erased (its subscriber was deleted: the record stays, anonymous, for the account's statistics).",
      },
      template_id: { type: "string" },
      template_slug: { type: "string" },
      template_version: {
        type: "integer",
        minimum: 1,
        description: "The template version the email was queued with; it is sent with that one, even if the template changed since.",
      },
      idempotency_key: { type: ["string", "null"], description: "The key it was sent with, if any." },
      provider: { type: ["string", "null"], description: "`smtp`, `ses`, or `sandbox` (never really sent; see GET /api/v1/emails/{id}/sandbox)." },
      message_id: { type: ["string", "null"], description: "The `Message-ID` header of the message, once sent." },
      provider_message_id: { type: ["string", "null"], description: "The provider's own id of the message once sent, where it gives one (`ses`: the SES MessageId its bounce, complaint and delivery notifications name); null otherwise." },
      error: {
        type: ["string", "null"],
        description:
          "Why it failed, bounced or was suppressed: a stable code (`template_unavailable`, `template_render_failed`, `recipient_rejected`, `message_rejected`, `attempts_exhausted`, `relay_unavailable`, `service_unavailable`, `recipient_erased`, `campaign_cancelled`; and for a recipient who may not get this mail: `recipient_unsubscribed` (marketing mail), `recipient_suppressed` (an address on the account's suppression list), `recipient_bounced`, `recipient_complained` (any mail)), followed by `: ` and the relay's reply (addresses replaced by `<recipient>`) where the relay gave one, e.g. `recipient_rejected: 550 5.1.1 <recipient>: User unknown`.",
      },
      attempts: { type: "integer", minimum: 0, description: "Delivery attempts so far (transient failures are retried)." },
      queued_at: timestamp("When the email was accepted (RFC 3339, UTC)."),
      sent_at: nullableTimestamp("When the provider took the message; null until then."),
      failed_at: nullableTimestamp("When the email ended without being sent (failed, bounced or suppressed); null otherwise."),
      updated_at: timestamp("When the email last changed (RFC 3339, UTC)."),
      bounce: ref("EmailBounce"),
      history: { type: "array", items: ref("EmailStatusChange"), description: "Every status the email had, oldest first, each with its time." },
      next_attempt_at: nullableTimestamp("When a deferred email is tried again; null unless `deferred`."),
    },
  },
  EmailPage: page("Email", "A page of emails."),
  SandboxMessage: {
    type: "object",
    additionalProperties: false,
    description: "The whole rendered message the sandbox provider kept instead of sending it.",
    required: ["email_id", "from", "to", "subject", "html", "text", "headers", "captured_at"],
    properties: {
      email_id: { type: "string" },
      from: { type: "string" },
      to: { type: "string" },
      subject: { type: "string" },
      html: { type: "string" },
      text: { type: "string" },
      headers: {
        type: "object",
        additionalProperties: { type: "string" },
        description: "The message's headers, e.g. `Message-ID`, `List-Unsubscribe`.",
      },
      captured_at: timestamp("When the sandbox kept the message (RFC 3339, UTC)."),
    },
  },
};

export const parameters: Record<string, ParameterObject> = {
  EmailId: pathParam("id", "The email's id."),
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    description: `Optional (as Stripe's): a unique key of your choice, 1-${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters not starting or ending with a space, e.g. a UUID. The same as the body's \`idempotency_key\`; when both are given they must be equal.`,
    schema: idempotencyKey,
  },
};

export const headers: Record<string, unknown> = {
  EmailLocation: {
    description: "The email's address, `/api/v1/emails/{id}`, where its delivery status can be followed.",
    required: true,
    schema: { type: "string" },
  },
  IdempotentReplayed: {
    description: "`true` when this answer is the replay of an earlier request with the same idempotency key; absent otherwise.",
    schema: { type: "string", enum: ["true"] },
  },
};

export const paths: Paths = {
  "/api/v1/emails/send": {
    post: {
      operationId: "sendEmail",
      summary: "Send a transactional email",
      description: [
        "Queues one email to one recipient, rendered from the template's current version, and answers at once with **202 Accepted** and the email as queued (`status: queued`). The email goes out through the queue; follow it with GET /api/v1/emails/{id} (the `Location` header).",
        "Test-mode keys never deliver: their mail is kept by the sandbox (GET /api/v1/emails/{id}/sandbox), and an account sends at most `TEST_MODE_DAILY_LIMIT` messages a day in test mode (default 10,000; beyond it a 429 `test_mode_quota_exceeded` with `Retry-After`).",
        "**Idempotency** (as Stripe's): give a key in the `Idempotency-Key` header or in `idempotency_key` (both: they must be equal, else 400). " +
          "A repeat with the same key and the same body sends no second email and answers with the original result: status 202 and the same body, with the header `Idempotent-Replayed: true`. " +
          "The same key with another body is a 409 `idempotency_key_reused`. Two concurrent requests with one key send one email. " +
          `Keys are kept at least ${IDEMPOTENCY_KEY_RETENTION_HOURS} hours, per account and mode. Retry a send that timed out or failed with a 5xx with the same key.`,
        "Nothing is sent for bad input: an unknown `template_slug` (404 `template_not_found`, also for another account's templates), an invalid recipient (400), `variables` that are not an object (400) or too large (413).",
        "**A recipient who may not get this mail** (by the template's category: `marketing` mail goes to no unsubscribed subscriber and no address erased at its owner's request; no mail at all to a bounced or complained subscriber) is refused at once when the subscribers service can tell: the answer is still 202, with the email `failed` and its reason in `error` (`recipient_unsubscribed`, `recipient_bounced`, `recipient_complained`, `recipient_suppressed`), and nothing is sent. Otherwise the same check is made again right before sending.",
      ].join("\n\n"),
      tags: ["Emails"],
      // Its own budget, smaller than other writes': each send is mail going out.
      "x-rate-limit-class": "send",
      parameters: [param("IdempotencyKey")],
      requestBody: body("EmailSend"),
      responses: {
        "202": {
          description:
            "Accepted: queued, or refused at once for its recipient (`status: failed`, `error` says why); also the answer to a replay (then with `Idempotent-Replayed: true`).",
          headers: {
            "X-Request-Id": { $ref: "#/components/headers/RequestId" },
            Location: { $ref: "#/components/headers/EmailLocation" },
            "Idempotent-Replayed": { $ref: "#/components/headers/IdempotentReplayed" },
          },
          content: { "application/json": { schema: ref("EmailQueued") } },
        },
        ...errors(...bodyErrors, "NotFound", "Conflict", "UnprocessableContent", ...serviceErrors),
      },
    },
  },
  "/api/v1/emails/batch": {
    post: {
      operationId: "sendEmailBatch",
      summary: "Send a batch of transactional emails",
      description: [
        `Queues up to ${MAX_BATCH_MESSAGES} emails in one request: a JSON array of messages, each what POST /api/v1/emails/send takes (its own recipient, template, variables, sender and \`idempotency_key\`), decided by the same rules as a single send: validation, the template, the recipient's suppressions, the From domain, idempotency and the test-mode quota.`,
        "**The answer is 200 once the batch was read**, whatever became of its messages: `results` holds one entry per message, in order, with the status a single send would have answered for it: 202 and the queued `email`, or the error status and the same problem (`code`) a single send would have answered. Retry only the failed entries (with their idempotency keys, a retry of the whole batch is also safe). The batch as a whole is refused, and nothing of it sent, when it is not a JSON array of 1-500 objects (400), is larger than 8 MiB (413 `payload_too_large`), or does not fit in the `send` budgets (429, or 413 `batch_exceeds_rate_limit` when it never could).",
        "**Idempotency**: per message, with its `idempotency_key` (no `Idempotency-Key` header for a batch). A key used before with the same message answers the original email (`replayed: true`); with another message, that entry is a 409 `idempotency_key_reused`. A key given twice in one batch is the same: the first message sends, the later one replays it.",
        "**Rate limits**: each message counts one against the key's and the account's `send` budgets, charged all or none once the batch is read: a batch that does not fit is a 429 with `Retry-After` (until the whole batch fits) and nothing is sent; a batch refused as malformed counts one. **Test mode**: the new emails of a batch are charged to the day's quota together; when they do not all fit, each of them gets a 429 `test_mode_quota_exceeded` entry and none is sent.",
      ].join("\n\n"),
      tags: ["Emails"],
      // The send budget, one per message (services/gateway/src/routes/define.ts, rateCost).
      "x-rate-limit-class": "send",
      requestBody: body("EmailBatch"),
      responses: {
        "200": json(ref("EmailBatchResult"), "The batch was read: each message's outcome, in order."),
        ...errors(...bodyErrors, "TooManyRequests", ...serviceErrors),
      },
    },
  },
  "/api/v1/emails": {
    get: {
      operationId: "listEmails",
      summary: "List emails",
      description: "Newest first; narrowed by `status`, `campaign_id` and/or `subscriber_id` when given (a `cursor` works only with the filter it came with, else 400).",
      tags: ["Emails"],
      parameters: [
        param("Limit"),
        { name: "status", in: "query", description: "Only emails with this status now.", schema: ref("EmailStatus") },
        {
          name: "campaign_id",
          in: "query",
          description: "Only the emails of this campaign (with `status=failed`: its failures, each with its reason in `error`).",
          schema: { type: "string", minLength: 1, maxLength: 100 },
        },
        {
          name: "subscriber_id",
          in: "query",
          description: "Only the emails to this subscriber (a subscriber's page: what they were sent). Erasing a subscriber unlinks their emails, so an erased subscriber's list is empty.",
          schema: { type: "string", minLength: 1, maxLength: 100 },
        },
        param("Cursor"),
      ],
      responses: { "200": json(ref("EmailPage"), "A page of emails."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/emails/{id}": {
    get: {
      operationId: "getEmail",
      summary: "Get an email and its delivery status",
      tags: ["Emails"],
      parameters: [param("EmailId")],
      responses: { "200": json(ref("Email"), "The email."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/emails/{id}/sandbox": {
    get: {
      operationId: "getSandboxMessage",
      summary: "Read what a sandboxed email would have sent",
      description:
        "The sandbox provider (the default of `npm start`, and always for test-mode keys) keeps the whole rendered message instead of sending it: sender, recipient, subject, HTML, text and headers. It keeps each for `SANDBOX_RETENTION_HOURS` (72) and at most `SANDBOX_MAX_MESSAGES_PER_TENANT` (10,000) per account and mode, the oldest dropped first: a sandboxed message no longer kept (or erased) is a 404 `sandbox_message_expired`. 404 `sandbox_message_not_found` for an email that was not sandboxed (or not rendered yet).",
      tags: ["Emails"],
      parameters: [param("EmailId")],
      responses: { "200": json(ref("SandboxMessage"), "The kept message."), ...errors("NotFound", ...serviceErrors) },
    },
  },
};
