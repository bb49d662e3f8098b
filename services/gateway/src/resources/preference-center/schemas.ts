import type { FromSchema } from "json-schema-to-ts";
import { LOCALES, visibleTextRule } from "@emailsvc/text";
import { body, bodyErrors, errors, json, lineText, noContent, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import { translations } from "../tags/schemas.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// The preference portal's part of the OpenAPI document: the token an
// integrator mints for a subscriber, and the API that token opens.

const PREFERENCE_TOKEN = [{ PreferenceToken: [] }];

const portalTag: JsonSchema = {
  type: "object",
  additionalProperties: false,
  required: ["id", "name", "description", "translations"],
  properties: {
    id: { type: "string", examples: ["tag_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
    name: { type: "string" },
    description: { type: "string" },
    translations: {
      ...translations,
      description: "The tag's name and description in other languages, by locale (as its owner gave them): show the one of the subscriber's `locale`, else `name` and `description`.",
    },
  },
};

/** Longest sender name (as the portal takes it). */
const SENDER_NAME_MAX = 100;

/** The name the pages give the sender. */
const senderName = {
  ...lineText(SENDER_NAME_MAX, visibleTextRule(SENDER_NAME_MAX)),
  description: 'How your subscribers know you: the preference page and the unsubscribe pages name you with it ("Your subscriptions with Acme"). 1-100 characters with visible text.',
} as const;

const frameAncestors = {
  type: "array",
  maxItems: 32,
  items: {
    type: "string",
    minLength: 1,
    maxLength: 253,
    pattern: "^(\\*|'self'|'none'|https?://(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?)$",
  },
  description:
    "Who may embed your portal page in an iframe (CSP `frame-ancestors`): `*`, `'self'`, `'none'` or origins such as `https://shop.example.com` and `https://*.example.com`. Empty: the platform's default (any site, unless the operator set `PORTAL_FRAME_ANCESTORS`).",
} as const;

/** The logo above the portal pages' heading. */
const logoUrl = {
  type: "string",
  minLength: 1,
  maxLength: 2048,
  pattern: "^https://",
  "x-pattern-message": "must be an https:// URL (the pages load nothing over plain http)",
  description:
    "Your logo above the preference page's heading: an https URL of an image (at most 2048 characters; no user name or password in it). The pages allow images from its origin only; its text alternative is `sender_name`.",
  examples: ["https://www.example.com/logo.png"],
} as const;

/** The colour of the portal pages' buttons and links. */
const brandColor = {
  type: "string",
  pattern: "^#[0-9A-Fa-f]{6}$",
  "x-pattern-message": "must be a colour as #rrggbb, e.g. #0a58ca",
  description:
    "The colour of the pages' buttons and links, `#rrggbb`, with a contrast of at least 4.5:1 against white (WCAG 2.1 AA: the buttons' white text and the links on the white page stay readable); a lighter one is a 400 naming its ratio. Stored in lower case.",
  examples: ["#0a58ca"],
} as const;

/** Why someone gets no mail of a category; null: they get it. */
const mailingBlock = {
  type: ["string", "null"],
  enum: ["unsubscribed", "bounced", "complained", "suppressed", "unconfirmed", null],
} as const;

export const PortalSettingsUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: "Any of the fields; fields left out keep their value.",
  properties: {
    frame_ancestors: frameAncestors,
    sender_name: { ...senderName, type: ["string", "null"], description: `${senderName.description} null removes it.` },
    logo_url: { ...logoUrl, type: ["string", "null"], description: `${logoUrl.description} null removes it.` },
    brand_color: { ...brandColor, type: ["string", "null"], description: `${brandColor.description} null: the platform's blue.` },
  },
} as const;
export type PortalSettingsUpdateBody = FromSchema<typeof PortalSettingsUpdate>;

export const schemas: Record<string, JsonSchema> = {
  PortalSettings: {
    type: "object",
    additionalProperties: false,
    required: ["frame_ancestors", "sender_name", "logo_url", "brand_color", "updated_at"],
    properties: {
      frame_ancestors: frameAncestors,
      logo_url: { type: ["string", "null"], description: "The logo above the pages' heading (https); null while unset." },
      brand_color: { type: ["string", "null"], description: "The colour of the pages' buttons and links (`#rrggbb`); null while unset (the platform's blue)." },
      sender_name: { type: ["string", "null"], description: "How the pages name you; null while unset (the unsubscribe pages then use the account's name, the preference page names no one)." },
      updated_at: { ...timestamp("When they were last changed (RFC 3339, UTC); null while never set."), type: ["string", "null"] },
    },
  },
  PortalSettingsUpdate,
  PreferenceLocale: {
    type: "object",
    additionalProperties: false,
    required: ["locale"],
    properties: { locale: { type: ["string", "null"], enum: [...LOCALES, null], description: "null removes it." } },
  },
  SubscriberExport: {
    type: "object",
    description:
      "Every datum every service holds about the subscriber, and what GDPR Art. 15 and revDSG Art. 25 ask to be told. A service that does not answer fails the export (503 `export_incomplete`) rather than leaving its part out.",
    required: ["export", "profile", "tags", "audit_trail", "consent", "emails", "campaign_memberships", "trigger_sends", "about_this_data"],
    properties: {
      export: {
        type: "object",
        required: ["format_version", "generated_at", "subscriber_id"],
        properties: { format_version: { type: "integer" }, generated_at: { type: "string", format: "date-time" }, subscriber_id: { type: "string" } },
      },
      profile: { type: "object", description: "id, email, status, locale, metadata, created_at, updated_at." },
      tags: { type: "array", items: { type: "object" }, description: "Every tag held (private ones too), with when and how it was joined." },
      audit_trail: { type: "array", items: { type: "object" }, description: "Every change, with time, actor, source, IP and user agent." },
      consent: { type: "array", items: { type: "object" }, description: "Opt-ins, resubscriptions and unsubscribes." },
      emails: { type: "array", items: { type: "object" }, description: "Emails sent: template, subject, time, status, campaign." },
      campaign_memberships: { type: "array", items: { type: "object" } },
      trigger_sends: {
        type: "array",
        items: { type: "object" },
        description:
          "Every fire of a trigger for the subscriber: trigger_id, event_type, state (`sent`; `skipped` or `failed` with its `reason`, e.g. `created_not_active` for someone created other than active, `unsubscribed_all` for a list left by unsubscribing from everything; `pending` while its delay runs) and fired_at (its last change).",
      },
      about_this_data: { type: "object", description: "Controller, purposes, categories, recipients, retention, source, automated decisions, rights." },
    },
  },
  PreferenceToken: {
    type: "object",
    additionalProperties: false,
    required: ["token", "expires_at", "url"],
    properties: {
      token: { type: "string", description: "Bearer token of the preference-center API; acts on this one subscriber only." },
      expires_at: timestamp("When the token stops working (PREFERENCE_TOKEN_TTL_SECONDS after it was made, 7 days by default)."),
      url: { type: "string", format: "uri", description: "The subscriber's preference page with this token: `{PREFERENCES_URL}/preferences?token=…`, or `https://<your custom domain>/preferences?token=…` once it is active." },
    },
  },
  PortalTag: portalTag,
  PreferenceCenter: {
    type: "object",
    additionalProperties: false,
    required: ["email", "status", "locale", "subscribed_tags", "available_tags", "mailability"],
    properties: {
      email: { type: "string" },
      status: { type: "string", enum: ["active", "unsubscribed", "bounced", "complained", "pending"] },
      mailability: {
        type: "object",
        additionalProperties: false,
        required: ["marketing", "transactional"],
        description:
          "Whether the subscriber gets mail now, per category, as the platform decides it for every send (the subscribers service's one answer): null when they get it, else why not. A page shows a held list as subscribed only while `marketing` is null (a list held by someone who gets no marketing mail sends them nothing).",
        properties: {
          marketing: { ...mailingBlock, description: "Campaigns and marketing templates." },
          transactional: { ...mailingBlock, description: "Transactional templates (receipts, password resets)." },
        },
      },
      locale: { type: ["string", "null"], enum: [...LOCALES, null], description: "The subscriber's language; null while unset." },
      subscribed_tags: { type: "array", items: ref("PortalTag"), description: "The public tags the subscriber holds." },
      available_tags: {
        type: "array",
        items: ref("PortalTag"),
        description: "Every public tag, held or not. Private and deleted tags are never listed.",
      },
    },
  },
};

export const parameters: Record<string, ParameterObject> = {
  PortalTagId: pathParam("tag_id", "The id of a tag (from `available_tags` or `subscribed_tags`)."),
};

const portalErrors = errors("Unauthorized", "InternalError", "Unavailable", "Timeout");

export const paths: Paths = {
  "/api/v1/portal-settings": {
    get: {
      operationId: "getPortalSettings",
      summary: "Your portal page's settings",
      description: "Settings of this account's preference page, in this key's mode (live and test are apart).",
      tags: ["Preference center"],
      responses: { "200": json(ref("PortalSettings"), "The settings."), ...errors(...serviceErrors) },
    },
    patch: {
      operationId: "updatePortalSettings",
      summary: "Change your portal page's settings",
      description:
        "Changes the fields given (`frame_ancestors`, `sender_name`, `logo_url`, `brand_color`); the others keep their value. The pages use the new values within 30 seconds. A logo that is not https or a colour with too little contrast against white is a 400 naming the field.",
      tags: ["Preference center"],
      requestBody: body("PortalSettingsUpdate"),
      responses: { "200": json(ref("PortalSettings"), "The settings after the change."), ...errors(...bodyErrors, ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/{id}/preference-token": {
    post: {
      operationId: "createPreferenceToken",
      summary: "Mint a preference link for a subscriber",
      description:
        "A short-lived token for the subscriber's preference page and API, signed (HS256, with the key's id so keys rotate without downtime), bound to your account, this mode and this subscriber. Erasing the subscriber ends every token of theirs at once. Put `url` in a mail, or hand the token to your own page.",
      tags: ["Preference center"],
      parameters: [param("SubscriberId")],
      responses: { "201": json(ref("PreferenceToken"), "The token and the page's URL."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/preference-center": {
    get: {
      operationId: "getPreferenceCenter",
      summary: "The subscriber's subscriptions",
      tags: ["Preference center"],
      security: PREFERENCE_TOKEN,
      responses: { "200": json(ref("PreferenceCenter"), "What the subscriber holds and may join."), ...portalErrors },
    },
  },
  "/api/v1/preference-center/tags/{tag_id}/subscribe": {
    post: {
      operationId: "subscribePreferenceTag",
      summary: "Join a public tag",
      description:
        "Joins a public tag (a private, deleted or unknown one is a 404 `tag_not_found`). A subscriber who had unsubscribed from everything is active again: they opted in themself. Written to the audit trail as a portal change.",
      tags: ["Preference center"],
      security: PREFERENCE_TOKEN,
      parameters: [param("PortalTagId")],
      responses: { "200": json(ref("PreferenceCenter"), "The subscriptions after the change."), ...errors("NotFound"), ...portalErrors },
    },
  },
  "/api/v1/preference-center/tags/{tag_id}/unsubscribe": {
    post: {
      operationId: "unsubscribePreferenceTag",
      summary: "Leave a tag",
      description: "Leaves a tag the subscriber holds; leaving one not held changes nothing. Written to the audit trail as a portal change.",
      tags: ["Preference center"],
      security: PREFERENCE_TOKEN,
      parameters: [param("PortalTagId")],
      responses: { "200": json(ref("PreferenceCenter"), "The subscriptions after the change."), ...errors("NotFound"), ...portalErrors },
    },
  },
  "/api/v1/preference-center/locale": {
    put: {
      operationId: "setPreferenceLocale",
      summary: "Set the subscriber's language",
      tags: ["Preference center"],
      security: PREFERENCE_TOKEN,
      requestBody: body("PreferenceLocale"),
      responses: { "200": json(ref("PreferenceCenter"), "The preferences after the change."), ...errors(...bodyErrors), ...portalErrors },
    },
  },
  "/api/v1/preference-center/export": {
    get: {
      operationId: "exportPreferenceData",
      summary: "Download everything stored about the subscriber",
      description:
        "One JSON document (data portability). The request is logged without personal data. Every service is asked for its part, so it draws from the tighter `privacy` budget (a few an hour per subscriber by default).",
      tags: ["Preference center"],
      security: PREFERENCE_TOKEN,
      "x-rate-limit-class": "privacy",
      responses: { "200": json(ref("SubscriberExport"), "The export."), ...portalErrors },
    },
  },
  "/api/v1/subscribers/{id}/export": {
    get: {
      operationId: "exportSubscriber",
      summary: "Export everything stored about a subscriber",
      description: "The same document the subscriber downloads from their preference page, for a request that reached you (GDPR Art. 15, revDSG Art. 25). The request is logged (who, when, how) without personal data.",
      tags: ["Preference center"],
      parameters: [param("SubscriberId")],
      responses: { "200": json(ref("SubscriberExport"), "The export."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/preference-center/unsubscribe-all": {
    post: {
      operationId: "unsubscribeAllPreferences",
      summary: "Unsubscribe from everything",
      description:
        "No more marketing mail at all (transactional mail still arrives): the same operation as the one-click link of every marketing mail. An active subscriber becomes `unsubscribed`; a bounced or complained one keeps that status and the opt-out is recorded with it (set `active` later, they become `unsubscribed`). Every public tag is left, so none shows as subscribed; private tags stay. Joining a tag later subscribes them again, to that tag.",
      tags: ["Preference center"],
      security: PREFERENCE_TOKEN,
      responses: { "200": json(ref("PreferenceCenter"), "The subscriptions after the change."), ...portalErrors },
    },
  },
  "/api/v1/preference-center/account": {
    delete: {
      operationId: "deletePreferenceAccount",
      summary: "Erase the subscriber",
      description:
        "Permanent erasure (GDPR Art. 17, revDSG Art. 32): the subscriber, their tags, audit trail, emails and campaign records are removed from every service. Every preference token of theirs stops working. Draws from the `privacy` budget, as the export does.",
      tags: ["Preference center"],
      security: PREFERENCE_TOKEN,
      "x-rate-limit-class": "privacy",
      responses: { "204": noContent("Erased."), ...portalErrors },
    },
  },
};
