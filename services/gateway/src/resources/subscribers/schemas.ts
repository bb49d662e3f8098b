import type { FromSchema } from "json-schema-to-ts";
import { LOCALES, visibleTextRule } from "@emailsvc/text";
import { bodyErrors, body, errors, json, lineText, noContent, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import { emailAddress } from "../../openapi/common.js";
import { tagName } from "../tags/schemas.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// Subscribers' part of the OpenAPI document. Request schemas are `as const`
// so that their body types below are derived from them (FromSchema): the
// schema ajv validates with, the document publishes and the handler reads
// are one definition.

export const SUBSCRIBER_STATUSES = ["active", "unsubscribed", "bounced", "complained", "pending"] as const;

const status = {
  type: "string",
  enum: SUBSCRIBER_STATUSES,
  description:
    "`pending`: signed up with double opt-in and not confirmed yet (no marketing mail; erased when the account's confirmation window passes unconfirmed). It comes from double opt-in only: a create or update cannot set it.",
} as const;
/** The statuses a create or an update may set (not `pending`: that comes from double opt-in). */
const settableStatus = { type: "string", enum: SUBSCRIBER_STATUSES.filter((s) => s !== "pending") as Exclude<(typeof SUBSCRIBER_STATUSES)[number], "pending">[] } as const;

/** What the person saw when they opted in, kept in the consent record. */
export const consentWording = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description:
    "What the person saw and agreed to, kept in the subscriber's consent record with the request's time, IP address and user agent (the audit trail, the export): the wording itself, a version label of it you keep, and where it was shown (a form's id, say).",
  properties: {
    text: { type: "string", maxLength: 2000, description: "The wording as shown, at most 2,000 characters." },
    version: { type: "string", maxLength: 100, pattern: "^[^\\u0000-\\u001f\\u007f]*$", description: "A version label of the wording, at most 100 characters." },
    source_id: { type: "string", maxLength: 100, pattern: "^[^\\u0000-\\u001f\\u007f]*$", description: "Where it was shown (a form's id, a page), at most 100 characters." },
  },
} as const;

export const METADATA_KEY = {
  maxLength: 40,
  pattern: "^[A-Za-z0-9_][A-Za-z0-9_-]*$",
  "x-pattern-message": "keys are 1-40 characters of letters, digits, _ and -, not starting with -",
} as const;
const METADATA_VALUE = { type: ["string", "number", "boolean"], maxLength: 500 } as const;

const metadata = {
  type: "object",
  description:
    "Your own attributes: at most 50 keys of 1-40 characters (letters, digits, `_`, `-`; not starting with `-`), each a string of at most 500 characters, a number or a boolean. At most 8 KiB as JSON in all (413 `metadata_too_large` beyond).",
  maxProperties: 50,
  propertyNames: METADATA_KEY,
  additionalProperties: METADATA_VALUE,
} as const;

const email = emailAddress;

/** The languages a subscriber can read the preference portal in. */

const locale = {
  type: ["string", "null"],
  enum: [...LOCALES, "", null],
  description: "The subscriber's language: `en`, `de`, `fr` or `it`; null (or an empty string) for none. It is the `lang` of their mail when the template declares none.",
} as const;

export const SubscriberCreate = {
  type: "object",
  additionalProperties: false,
  required: ["email"],
  properties: {
    email,
    tags: {
      type: "array",
      maxItems: 100,
      items: tagName,
      description: "At most 100 tag names; tags that do not exist yet are created.",
    },
    metadata,
    status: { ...settableStatus, description: "Defaults to `active` (`pending` with double opt-in, and then it must be left out)." },
    double_opt_in: {
      type: "boolean",
      description:
        "Create the subscriber `pending` and send them the account's confirmation mail; they become `active` when they click its link (see `/api/v1/audience-settings`). Without it, creates follow the account's `double_opt_in_for_api` (default off: you usually hold the consent yourself). Not with `status`.",
    },
    consent: consentWording,
    locale,
    resubscribe: {
      type: "boolean",
      description:
        "The person opted in again. An address erased at its owner's request is suppressed: creating it is a 409 `subscriber_suppressed` unless this is true, with `resubscribe_reason`; then the suppression is lifted and the reason goes into the new subscriber's audit trail. No effect on an address that is not suppressed.",
    },
    resubscribe_reason: {
      ...lineText(500, visibleTextRule(500)),
      description:
        "Why the address may be mailed again (e.g. how and when the person opted in again): 1-500 characters with visible text (spaces and invisible characters such as U+200B, U+FEFF, U+2060 or U+2800 around it are trimmed, and do not count), no control characters. Required with `resubscribe: true`, refused without it.",
    },
  },
  allOf: [
    // A reason with `resubscribe: true` only, and always with it.
    {
      if: { properties: { resubscribe: { const: true } }, required: ["resubscribe"] },
      then: { properties: { resubscribe_reason: true }, required: ["resubscribe_reason"] },
      else: { not: { properties: { resubscribe_reason: true }, required: ["resubscribe_reason"] } },
    },
    // Double opt-in creates a pending subscriber: no status with it.
    {
      if: { type: "object", properties: { double_opt_in: { const: true } }, required: ["double_opt_in"] },
      then: { not: { properties: { status: true }, required: ["status"] } },
    },
  ],
} as const;
export type SubscriberCreateBody = FromSchema<typeof SubscriberCreate>;

export const SubscriberUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: "Any of the fields; fields left out keep their value. Tags are changed with the tag operations.",
  properties: {
    email,
    status: {
      ...settableStatus,
      description:
        "`active` for a bounced or complained subscriber who unsubscribed from everything meanwhile (the one-click link or the preference page: `subscriber.opted_out` in the audit trail) makes them `unsubscribed`: lifting the bounce does not undo their choice. Set `active` again only once they opted in again.",
    },
    locale: { ...locale, description: "The subscriber's language: `en`, `de`, `fr` or `it`; null (or an empty string) removes it." },
    metadata: {
      type: "object",
      maxProperties: 50,
      propertyNames: METADATA_KEY,
      additionalProperties: { type: ["string", "number", "boolean", "null"], maxLength: 500 },
      description:
        "Merged into the stored metadata: the keys given replace those stored, other stored keys are kept, and a key whose value is null is removed. Keys and values as on create; the merged result is at most 50 keys and 8 KiB as JSON (413 `metadata_too_large` beyond).",
    },
  },
} as const;
export type SubscriberUpdateBody = FromSchema<typeof SubscriberUpdate>;

export const SubscriberTagsAdd = {
  type: "object",
  additionalProperties: false,
  required: ["tags"],
  properties: {
    tags: {
      type: "array",
      minItems: 1,
      maxItems: 100,
      items: tagName,
      description: "At most 100 tag names to add to the subscriber's tags (never replaces them); unknown names are created.",
    },
  },
} as const;
export type SubscriberTagsAddBody = FromSchema<typeof SubscriberTagsAdd>;

const confirmationExpiry = {
  type: "integer",
  minimum: 60,
  maximum: 7_776_000,
  description: "How long an unconfirmed (`pending`) subscriber is kept before it is erased, in seconds: 60 to 7,776,000 (90 days). Default 604,800 (7 days).",
} as const;
const confirmationTemplate = {
  type: ["string", "null"],
  maxLength: 100,
  pattern: "^[a-z0-9][a-z0-9_-]*$",
  description:
    "The slug of your template for the confirmation mail (category `transactional`: a pending subscriber gets no marketing mail); it gets `{{confirmation_url}}` (the button's link) and the platform's words in the subscriber's language as `subject`, `heading`, `intro`, `button` and `ignore`. null: the platform's own mail in English, German, French or Italian (made in your account as the template `platform-double-opt-in` on the first confirmation, which you may edit).",
} as const;

export const AudienceSettingsUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: "Any of the fields; fields left out keep their value.",
  properties: {
    double_opt_in: { type: "boolean", description: "People who sign up (a signup form, the portal) confirm by mail before they are mailed." },
    double_opt_in_for_api: { type: "boolean", description: "`POST /api/v1/subscribers` without a `status` creates pending subscribers too." },
    confirmation_expiry_seconds: confirmationExpiry,
    confirmation_template: confirmationTemplate,
  },
} as const;
export type AudienceSettingsUpdateBody = FromSchema<typeof AudienceSettingsUpdate>;

export const schemas: Record<string, JsonSchema> = {
  AudienceSettings: {
    type: "object",
    additionalProperties: false,
    required: ["double_opt_in", "double_opt_in_for_api", "confirmation_expiry_seconds", "confirmation_template"],
    description: "Your account's double opt-in, in this key's mode (live and test are apart).",
    properties: {
      double_opt_in: { type: "boolean", description: "People who sign up (a signup form, the portal) become `pending` and get a confirmation mail; they are `active` once they click its button. Default true: anyone can type anyone's address into a form." },
      double_opt_in_for_api: { type: "boolean", description: "`POST /api/v1/subscribers` without a `status` does the same (a request can always ask with `double_opt_in`). Default false: an integrator creating subscribers server-side usually holds the consent itself." },
      confirmation_expiry_seconds: confirmationExpiry,
      confirmation_template: confirmationTemplate,
    },
  },
  AudienceSettingsUpdate,
  SubscriberStatus: status,
  Metadata: metadata,
  Subscriber: {
    type: "object",
    additionalProperties: false,
    required: ["id", "email", "status", "locale", "metadata", "tags", "created_at", "updated_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["sub_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      email: { type: "string", format: "email", description: "Unique per account and mode, compared case-insensitively." },
      status: ref("SubscriberStatus"),
      locale: { type: ["string", "null"], enum: [...LOCALES, null], description: "The subscriber's language; null when not set." },
      metadata: ref("Metadata"),
      tags: { type: "array", items: { type: "string" }, description: "Tag names, sorted." },
      created_at: timestamp("When the subscriber was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the subscriber last changed (RFC 3339, UTC)."),
    },
  },
  SubscriberCreate,
  SubscriberUpdate,
  SubscriberTagsAdd,
  SubscriberPage: page("Subscriber", "A page of subscribers, oldest first."),
  SubscriberEvent: {
    type: "object",
    additionalProperties: false,
    required: ["id", "type", "occurred_at", "actor", "source", "ip", "user_agent", "data"],
    description:
      "One entry of the subscriber's audit trail: what changed, when, who made the change, how it came and from where. The trail is deleted with the subscriber.",
    properties: {
      id: { type: "string", readOnly: true },
      type: {
        type: "string",
        description:
          "`subscriber.created`, `subscriber.tag_added`, `subscriber.tag_removed`, `subscriber.status_changed`, `subscriber.updated`, `subscriber.opted_out` (a bounced or complained subscriber unsubscribed from everything: the status stays, the opt-out is kept with it), `suppression.added`, `suppression.removed` (the subscriber's address put on or taken off the suppression list; `data.reason` says why), `subscriber.confirmation_sent` (double opt-in: the confirmation mail handed to delivery; the confirmation itself is a `subscriber.status_changed` from `pending` to `active` with `data.reason` `confirmed`). A creation's `data.consent` holds the wording the person saw (`text`, `version`, `source_id`) when the request gave it.",
      },
      occurred_at: timestamp("When the change happened (RFC 3339, UTC)."),
      actor: {
        type: "string",
        description: "Who made the change: `api_key:<key id>`, `admin`, `portal`, `one_click` (an unsubscribe link), `form` (a public signup form), `trigger:<id>` or `system`.",
      },
      source: {
        type: ["string", "null"],
        enum: ["api", "portal", "one_click", "import", "form", null],
        description: "How the change came: this API, the preference portal, a one-click unsubscribe link, an import, or a public signup form; null when not recorded.",
      },
      ip: { type: ["string", "null"], description: "The IP address the request came from (IPv4 or IPv6); null when not known." },
      user_agent: { type: ["string", "null"], maxLength: 512, description: "The request's User-Agent header (at most 512 characters); null when none." },
      data: { type: "object", additionalProperties: true, description: "What changed, by ids and names (never the address or metadata values)." },
    },
  },
  SubscriberEventPage: page("SubscriberEvent", "A page of audit-trail entries, oldest first."),
};

export const parameters: Record<string, ParameterObject> = {
  SubscriberId: pathParam("id", "The subscriber's id."),
};

export const paths: Paths = {
  "/api/v1/subscribers": {
    post: {
      operationId: "createSubscriber",
      summary: "Create a subscriber",
      description:
        "Tags that do not exist yet are created. Emails are unique per account and mode, compared case-insensitively (409 `email_taken`). An address erased at its owner's request (`DELETE /api/v1/subscribers/{id}`) is suppressed: 409 `subscriber_suppressed` unless the body says `\"resubscribe\": true` with a `resubscribe_reason`.",
      tags: ["Subscribers"],
      requestBody: body("SubscriberCreate"),
      responses: {
        "201": json(ref("Subscriber"), "The new subscriber."),
        ...errors(...bodyErrors, "Conflict", ...serviceErrors),
      },
    },
    get: {
      operationId: "listSubscribers",
      summary: "List subscribers",
      tags: ["Subscribers"],
      parameters: [
        param("Limit"),
        { name: "status", in: "query", description: "Only subscribers with this status.", schema: ref("SubscriberStatus") },
        {
          name: "email",
          in: "query",
          description: "Only addresses starting with this text, ignoring case (`ann` finds `Anna@example.com`).",
          schema: { type: "string", minLength: 1, maxLength: 254, pattern: "^[^\\u0000-\\u001f\\u007f]*$" },
        },
        { name: "tag", in: "query", description: "Only subscribers holding the tag of this name (ignoring case); a name no tag has gives an empty list.", schema: tagName },
        param("Cursor"),
      ],
      responses: { "200": json(ref("SubscriberPage"), "A page of subscribers."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/by-email/{email}": {
    get: {
      operationId: "getSubscriberByEmail",
      summary: "Look a subscriber up by email address",
      description: "The address is URL-encoded in the path (`@` may stay as it is); it is compared case-insensitively.",
      tags: ["Subscribers"],
      parameters: [pathParam("email", "The email address, URL-encoded.", emailAddress)],
      responses: { "200": json(ref("Subscriber"), "The subscriber."), ...errors("BadRequest", "NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/{id}": {
    get: {
      operationId: "getSubscriber",
      summary: "Get a subscriber",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      responses: { "200": json(ref("Subscriber"), "The subscriber."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateSubscriber",
      summary: "Update a subscriber",
      description:
        "Changes any of email, status and metadata. Metadata is merged: given keys replace stored ones, other stored keys are kept, and a key set to null is removed.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      requestBody: body("SubscriberUpdate"),
      responses: {
        "200": json(ref("Subscriber"), "The updated subscriber."),
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
    delete: {
      operationId: "deleteSubscriber",
      summary: "Delete a subscriber permanently",
      description: "Removes the subscriber's data, tag links and audit trail. It cannot be undone.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/{id}/tags": {
    post: {
      operationId: "addSubscriberTags",
      summary: "Add tags to a subscriber",
      description: "Adds to the subscriber's tags, never replaces them; tags that do not exist yet are created.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      requestBody: body("SubscriberTagsAdd"),
      responses: {
        "200": json(ref("Subscriber"), "The subscriber with its tags."),
        ...errors(...bodyErrors, "NotFound", ...serviceErrors),
      },
    },
  },
  "/api/v1/subscribers/{id}/tags/{tag_name}": {
    delete: {
      operationId: "removeSubscriberTag",
      summary: "Remove one tag from a subscriber",
      description: "The other tags stay.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId"), pathParam("tag_name", "The tag's name, URL-encoded.", tagName)],
      responses: {
        "200": json(ref("Subscriber"), "The subscriber with its remaining tags."),
        ...errors("NotFound", ...serviceErrors),
      },
    },
  },
  "/api/v1/subscribers/{id}/events": {
    get: {
      operationId: "listSubscriberEvents",
      summary: "Read a subscriber's audit trail",
      description:
        "Every subscription change (created, status changed, tag added or removed, fields updated), with a UTC timestamp, who made it, how it came (`api`, `portal`, `one_click`, `import`, `form`) and the request's IP address and user agent. Deleted with the subscriber.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId"), param("Limit"), param("Cursor")],
      responses: {
        "200": json(ref("SubscriberEventPage"), "A page of audit-trail entries."),
        ...errors("BadRequest", "NotFound", ...serviceErrors),
      },
    },
  },
  "/api/v1/audience-settings": {
    get: {
      operationId: "getAudienceSettings",
      summary: "Your double opt-in settings",
      tags: ["Subscribers"],
      responses: { "200": json(ref("AudienceSettings"), "The settings (the defaults until first changed)."), ...errors(...serviceErrors) },
    },
    patch: {
      operationId: "updateAudienceSettings",
      summary: "Change your double opt-in settings",
      description: "Changes the fields given; the others keep their value. A new confirmation window applies to subscribers who sign up from now on.",
      tags: ["Subscribers"],
      requestBody: body("AudienceSettingsUpdate"),
      responses: { "200": json(ref("AudienceSettings"), "The settings after the change."), ...errors(...bodyErrors, ...serviceErrors) },
    },
  },
};
