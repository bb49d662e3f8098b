import type { FromSchema } from "json-schema-to-ts";
import {
  bodyErrors,
  body,
  dateTimeInput,
  errors,
  json,
  lineText,
  noContent,
  nullableTimestamp,
  optionalBody,
  page,
  param,
  pathParam,
  ref,
  serviceErrors,
  timestamp,
} from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";
import { METADATA_KEY } from "../subscribers/schemas.js";
import { tagName } from "../tags/schemas.js";

// Campaigns' part of the OpenAPI document; body types are derived from the schemas.

export const CAMPAIGN_STATUSES = ["draft", "scheduled", "sending", "paused", "sent", "cancelled", "failed"] as const;

const tagList = (description: string) => ({ type: "array", maxItems: 100, items: tagName, description }) as const;

/** A scalar a metadata condition compares with: what metadata values may be. */
const conditionValue = { type: ["string", "number", "boolean"], maxLength: 500 } as const;

const metadataCondition = {
  type: "object",
  additionalProperties: false,
  required: ["key"],
  minProperties: 2,
  maxProperties: 2,
  description:
    "One condition on `metadata.<key>`, with exactly one of `equals` (the value equals this string, number or boolean, exactly: the string \"3\" is not the number 3), `in` (equals one of 1-100 such values) or `exists` (true: the key is set; false: it is not).",
  properties: {
    key: { type: "string", minLength: 1, ...METADATA_KEY },
    equals: conditionValue,
    in: { type: "array", minItems: 1, maxItems: 100, items: conditionValue },
    exists: { type: "boolean" },
  },
} as const;

export const TagFilter = {
  type: "object",
  additionalProperties: false,
  description:
    "Who a campaign reaches: active subscribers holding any (`match: \"any\"`, the default) or all (`\"all\"`) of `include_tags` (every active subscriber when empty), none of `exclude_tags`, and meeting every `metadata` condition. Tag names compare ignoring case; a name that is no tag of yours is a 400 `unknown_tags` naming it.",
  properties: {
    include_tags: tagList("Tag names, at most 100."),
    match: { type: "string", enum: ["any", "all"], default: "any" },
    exclude_tags: tagList("Tag names, at most 100: holders of any are left out."),
    metadata: {
      type: "array",
      maxItems: 20,
      items: metadataCondition,
      description: "At most 20 conditions, one per key, all of which must hold (a second condition on a key is a 400).",
    },
  },
} as const;
export type TagFilterBody = FromSchema<typeof TagFilter>;

const name = lineText(200, "is 1-200 characters, not blank, without control characters");
const templateId = { type: "string", minLength: 1, maxLength: 100, description: "The id of one of your templates." } as const;

export const CampaignCreate = {
  type: "object",
  additionalProperties: false,
  required: ["name", "template_id", "tag_filter"],
  properties: { name, template_id: templateId, tag_filter: TagFilter },
} as const;
export type CampaignCreateBody = FromSchema<typeof CampaignCreate>;

export const CampaignUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: "Any of the fields of a draft; fields left out keep their value, and `tag_filter` replaces the whole filter.",
  properties: { name, template_id: templateId, tag_filter: TagFilter },
} as const;
export type CampaignUpdateBody = FromSchema<typeof CampaignUpdate>;

export const RecipientCountRequest = {
  type: "object",
  additionalProperties: false,
  required: ["tag_filter"],
  properties: { tag_filter: TagFilter },
} as const;
export type RecipientCountBody = FromSchema<typeof RecipientCountRequest>;

export const CampaignSend = {
  type: "object",
  additionalProperties: false,
  description: "Optional: no body, `{}` and a `send_at` not in the future all send at once.",
  properties: {
    send_at: dateTimeInput(
      "When to send, as an RFC 3339 date-time with its offset (e.g. `2026-11-22T09:00:00+01:00`). In the future: the campaign is `scheduled` and starts then (its audience is taken at that moment). Now or in the past: it sends at once. A scheduled campaign found overdue by more than the maximum schedule age (`CAMPAIGN_SCHEDULE_MAX_AGE_SECONDS` of the campaigns service, default one hour; say the platform was down at its time) is not sent late: it fails with `failure_reason` `schedule_missed`.",
    ),
  },
} as const;
export type CampaignSendBody = FromSchema<typeof CampaignSend>;

const count = (description: string) => ({ type: "integer", minimum: 0, description }) as const;

const STATUS_DESCRIPTION = [
  "Where the campaign is in its life:",
  "`draft` (being prepared: the only state in which it can be changed or deleted, else 409 `campaign_not_draft`) →",
  "`scheduled` (sent with a future `send_at`; starts then) or `sending` (its recipients are being handed to delivery) →",
  "`sent` (every recipient has an outcome in `counts`).",
  "A `sending` campaign can be `paused` (nothing more is handed to delivery; what was handed already finishes) and resumed.",
  "A `scheduled`, `sending` or `paused` campaign can be `cancelled`: every recipient not yet handed to the email provider is skipped (reason `cancelled`).",
  "`failed`: a scheduled campaign could not start; `failure_reason` says why (`schedule_missed`: found overdue by more than the maximum schedule age, `CAMPAIGN_SCHEDULE_MAX_AGE_SECONDS`, default one hour, it fails rather than sending late).",
  "`sent`, `cancelled` and `failed` are final. Asking for a change the state does not allow is a 409 `campaign_state_conflict` whose detail names the current state.",
].join(" ");

export const schemas: Record<string, JsonSchema> = {
  TagFilter,
  Campaign: {
    type: "object",
    additionalProperties: false,
    required: [
      "id",
      "name",
      "template_id",
      "tag_filter",
      "status",
      "send_at",
      "started_at",
      "finished_at",
      "failure_reason",
      "template_version",
      "total_recipients",
      "counts",
      "created_at",
      "updated_at",
    ],
    properties: {
      id: { type: "string", readOnly: true, examples: ["cmp_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string" },
      template_id: { type: "string" },
      tag_filter: ref("TagFilter"),
      status: { type: "string", enum: CAMPAIGN_STATUSES, readOnly: true, description: STATUS_DESCRIPTION },
      send_at: nullableTimestamp(
        "When a scheduled campaign starts sending (RFC 3339, UTC); null unless the send asked for a time in the future.",
      ),
      started_at: nullableTimestamp("When sending started (RFC 3339, UTC); null before."),
      finished_at: nullableTimestamp("When the campaign became `sent`, `cancelled` or `failed` (RFC 3339, UTC); null before."),
      failure_reason: {
        type: ["string", "null"],
        readOnly: true,
        description: "Why a `failed` campaign failed, a stable code: `schedule_missed` (overdue by more than the maximum schedule age), `template_not_found` (its template was deleted before it started). Null otherwise.",
      },
      template_version: {
        type: ["integer", "null"],
        minimum: 1,
        readOnly: true,
        description: "The version of the template being sent, pinned when sending started (later template changes do not affect this campaign); null before.",
      },
      total_recipients: {
        type: ["integer", "null"],
        minimum: 0,
        readOnly: true,
        description: "The recipients snapshotted when sending started (= `counts.total`): the active subscribers the filter matched then; null before. Final once `counts.snapshot_complete` is true (for very large audiences the snapshot may finish after the send answers).",
      },
      counts: ref("RecipientCounts"),
      created_at: timestamp("When the campaign was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the campaign last changed (RFC 3339, UTC)."),
    },
  },
  RecipientCounts: {
    type: "object",
    additionalProperties: false,
    readOnly: true,
    description:
      "Where the campaign's recipients stand. At every moment `pending + queued + sent + failed + skipped = total`, and `skipped` is the sum of `skipped_by_reason`. All zero for a draft and a scheduled campaign.",
    required: ["total", "pending", "queued", "sent", "failed", "skipped", "skipped_by_reason", "snapshot_complete"],
    properties: {
      total: count("Recipients snapshotted when sending started; grows while `snapshot_complete` is false, fixed after."),
      pending: count("Not yet handed to delivery."),
      queued: count("Handed to delivery, no outcome yet."),
      sent: count("Accepted by the email provider."),
      failed: count("Refused for good by the provider, or the message could not be rendered."),
      skipped: count("Not sent, for one of the reasons in `skipped_by_reason`."),
      skipped_by_reason: {
        type: "object",
        additionalProperties: false,
        required: ["unsubscribed", "erased", "suppressed", "cancelled"],
        properties: {
          unsubscribed: count("Unsubscribed after the snapshot, before their mail went out."),
          erased: count("Erased after the snapshot."),
          suppressed: count("Their address bounced or complained."),
          cancelled: count("Not yet handed to the provider when the campaign was cancelled."),
        },
      },
      snapshot_complete: { type: "boolean", description: "True once the audience snapshot is complete and `total` is final." },
    },
  },
  CampaignCreate,
  CampaignUpdate,
  CampaignSend,
  CampaignPage: page("Campaign", "A page of campaigns, oldest first."),
  RecipientCountRequest,
  RecipientCount: {
    type: "object",
    additionalProperties: false,
    required: ["count"],
    properties: { count: { type: "integer", minimum: 0, description: "Active subscribers the filter matches now." } },
  },
};

export const parameters: Record<string, ParameterObject> = {
  CampaignId: pathParam("id", "The campaign's id."),
};

export const paths: Paths = {
  "/api/v1/campaigns": {
    post: {
      operationId: "createCampaign",
      summary: "Create a campaign draft",
      description: "The template must be one of yours (404 `template_not_found`); unknown tags in the filter are a 400 `unknown_tags` naming them.",
      tags: ["Campaigns"],
      requestBody: body("CampaignCreate"),
      responses: { "201": json(ref("Campaign"), "The new draft."), ...errors(...bodyErrors, "NotFound", ...serviceErrors) },
    },
    get: {
      operationId: "listCampaigns",
      summary: "List campaigns",
      tags: ["Campaigns"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("CampaignPage"), "A page of campaigns."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/recipient-count": {
    post: {
      operationId: "countRecipientsOfFilter",
      summary: "Count the recipients of a filter",
      description: "The audience of a tag filter without creating a campaign: active subscribers it matches now.",
      tags: ["Campaigns"],
      requestBody: body("RecipientCountRequest"),
      responses: { "200": json(ref("RecipientCount"), "How many."), ...errors(...bodyErrors, ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}": {
    get: {
      operationId: "getCampaign",
      summary: "Get a campaign",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("Campaign"), "The campaign."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateCampaign",
      summary: "Change a draft",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      requestBody: body("CampaignUpdate"),
      responses: {
        "200": json(ref("Campaign"), "The changed draft."),
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
    delete: {
      operationId: "deleteCampaign",
      summary: "Delete a draft",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", "Conflict", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}/recipient-count": {
    get: {
      operationId: "countRecipients",
      summary: "Count a campaign's recipients",
      description: "Active subscribers the campaign's filter matches now.",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("RecipientCount"), "How many."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}/send": {
    post: {
      operationId: "sendCampaign",
      summary: "Send a draft, now or at a time",
      description:
        "Starts a `draft`. Without a body, with `{}` or with a `send_at` now or in the past, it sends at once: the template's current version is pinned, the audience is snapshotted (`total_recipients`, `counts.total`) and the campaign answers as `sending`. With a future `send_at` it answers as `scheduled` and starts then. Once sending, recipients are handed to delivery in the background, in batches within the account's sending rate, each exactly once whatever crashes or restarts happen: follow it with `GET /api/v1/campaigns/{id}` (`counts`, `status`). A campaign that is not a draft is a 409 `campaign_not_draft` naming its state, so a repeated send sends nothing more. The template must still exist (404 `template_not_found`). In test mode its recipients count against the account's test-mode quota (`TEST_MODE_DAILY_LIMIT` messages a day) as they are handed to delivery: past it the campaign waits, `sending` with recipients `pending`, until the quota has room again (one message every 24 h / the limit). An audience larger than a whole day's quota is a 403 `test_mode_campaign_too_large`, and the campaign stays a draft.",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      requestBody: optionalBody("CampaignSend"),
      responses: {
        "200": json(ref("Campaign"), "The campaign, `sending` (with `total_recipients`) or `scheduled`."),
        ...errors(...bodyErrors, "Forbidden", "NotFound", "Conflict", ...serviceErrors),
      },
    },
  },
  "/api/v1/campaigns/{id}/pause": {
    post: {
      operationId: "pauseCampaign",
      summary: "Pause a sending campaign",
      description:
        "Stops handing recipients to delivery; mail already handed (at most the service's in-flight bound, `CAMPAIGN_MAX_IN_FLIGHT`) finishes, so `queued` and `sent` may still move. Resume goes on where it stopped: nobody gets the mail twice, nobody is left out. Only a `sending` campaign can be paused (409 `campaign_state_conflict` naming the state otherwise).",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("Campaign"), "The campaign, `paused`."), ...errors("NotFound", "Conflict", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}/resume": {
    post: {
      operationId: "resumeCampaign",
      summary: "Resume a paused campaign",
      description: "Goes on handing the `pending` recipients to delivery. Only a `paused` campaign can be resumed (409 `campaign_state_conflict` naming the state otherwise).",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("Campaign"), "The campaign, `sending`."), ...errors("NotFound", "Conflict", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}/cancel": {
    post: {
      operationId: "cancelCampaign",
      summary: "Cancel a campaign",
      description:
        "Stops a `scheduled`, `sending` or `paused` campaign for good: every recipient not yet handed to the email provider is skipped (`counts.skipped_by_reason.cancelled`); mail the provider already has is not recalled (one handed to it in the same instant is counted as sent). Cancelling is final. Another state is a 409 `campaign_state_conflict` naming it (a draft is deleted instead).",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("Campaign"), "The campaign, `cancelled`."), ...errors("NotFound", "Conflict", ...serviceErrors) },
    },
  },
};
