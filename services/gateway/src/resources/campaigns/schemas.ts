import type { FromSchema } from "json-schema-to-ts";
import {
  bodyErrors,
  body,
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
  description: "Optional: without a body (or without `send_at`) the campaign is sent at once.",
  properties: {
    send_at: {
      type: "string",
      format: "date-time",
      description:
        "When to send (RFC 3339). In the future: the campaign is `scheduled` and starts then; now or in the past: it is sent at once. A scheduled campaign found overdue by more than CAMPAIGN_SCHEDULE_MAX_AGE_SECONDS (default one hour; the platform was down at its time) is not sent late: it fails with `failure_reason` `schedule_missed`.",
    },
  },
} as const;
export type CampaignSendBody = FromSchema<typeof CampaignSend>;

const count = (description: string) => ({ type: "integer", minimum: 0, description }) as const;

const RecipientCounts = {
  type: "object",
  additionalProperties: false,
  readOnly: true,
  required: ["total", "pending", "queued", "sent", "failed", "skipped", "skipped_by_reason", "snapshot_complete"],
  description:
    "Where the recipients stand, from the campaign's ledger (one record per recipient). At every read `pending + queued + sent + failed + skipped = total`, and the reasons add up to `skipped`. All zero before sending starts.",
  properties: {
    total: count("Recipients snapshotted when sending started: the active subscribers the filter matched then. Final once `snapshot_complete`."),
    pending: count("Not yet handed to delivery."),
    queued: count("Handed to delivery, no outcome yet."),
    sent: count("Accepted by the provider."),
    failed: count("Refused for good (by the provider, or the template could not be rendered)."),
    skipped: count("Not sent; see `skipped_by_reason`."),
    skipped_by_reason: {
      type: "object",
      additionalProperties: false,
      required: ["unsubscribed", "erased", "suppressed", "cancelled"],
      properties: {
        unsubscribed: count("Unsubscribed after the snapshot, before their turn."),
        erased: count("Deleted (erased) after the snapshot."),
        suppressed: count("Bounced or complained after the snapshot."),
        cancelled: count("Not handed to the provider before the campaign was cancelled."),
      },
    },
    snapshot_complete: { type: "boolean", description: "False while the audience is still being copied (a very large one); `total` grows until then." },
  },
} as const;

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
      "created_at",
      "updated_at",
      "send_at",
      "started_at",
      "finished_at",
      "failure_reason",
      "template_version",
      "total_recipients",
      "counts",
    ],
    properties: {
      id: { type: "string", readOnly: true, examples: ["cmp_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string" },
      template_id: { type: "string" },
      tag_filter: ref("TagFilter"),
      status: {
        type: "string",
        enum: CAMPAIGN_STATUSES,
        description:
          "`draft` until sent; only a draft can be changed or deleted (409 `campaign_not_draft` otherwise). Then `scheduled` (a future `send_at`) → `sending` ⇄ `paused` → `sent` (every recipient has an outcome); `cancelled` from scheduled, sending or paused; `failed` when a scheduled campaign could not start (`failure_reason`).",
      },
      created_at: timestamp("When the campaign was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the campaign last changed (RFC 3339, UTC)."),
      send_at: nullableTimestamp("When a scheduled campaign starts; null when sent at once or not sent."),
      started_at: nullableTimestamp("When sending started."),
      finished_at: nullableTimestamp("When it was sent, cancelled or failed."),
      failure_reason: {
        type: ["string", "null"],
        readOnly: true,
        description: "Why a campaign `failed`: `schedule_missed` (overdue by more than the allowed age), `template_not_found` (the template was deleted before a scheduled start).",
      },
      template_version: { type: ["integer", "null"], readOnly: true, description: "The template version every recipient gets, pinned when sending started." },
      total_recipients: { type: ["integer", "null"], minimum: 0, readOnly: true, description: "The recipients snapshotted when sending started (`counts.total`); null before." },
      counts: ref("RecipientCounts"),
    },
  },
  RecipientCounts,
  CampaignSend,
  CampaignCreate,
  CampaignUpdate,
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
  "/api/v1/campaigns/{id}/send": {
    post: {
      operationId: "sendCampaign",
      summary: "Send a draft, now or at a time",
      description:
        "Now: the audience is snapshotted (every active subscriber the filter matches gets one record in the campaign's ledger), the template version pinned, and the campaign is `sending`; the answer carries `total_recipients`. Recipients are handed to delivery in batches within the account's sending rate, each exactly once whatever crashes or restarts happen. With a future `send_at`: `scheduled`. Another state than `draft` is a 409 `campaign_not_draft` naming it.",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      requestBody: optionalBody("CampaignSend"),
      responses: { "200": json(ref("Campaign"), "The campaign, sending or scheduled."), ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}/pause": {
    post: {
      operationId: "pauseCampaign",
      summary: "Pause a sending campaign",
      description:
        "Nothing more is handed to delivery; what was handed already (at most CAMPAIGN_MAX_IN_FLIGHT recipients) still goes out. Resume goes on where it stopped: nobody gets the mail twice, nobody is left out. Only a `sending` campaign can be paused (409 `campaign_state_conflict` naming the state otherwise).",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("Campaign"), "The paused campaign."), ...errors("NotFound", "Conflict", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}/resume": {
    post: {
      operationId: "resumeCampaign",
      summary: "Resume a paused campaign",
      description: "Only a `paused` campaign can be resumed (409 `campaign_state_conflict` naming the state otherwise).",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("Campaign"), "The campaign, sending again."), ...errors("NotFound", "Conflict", ...serviceErrors) },
    },
  },
  "/api/v1/campaigns/{id}/cancel": {
    post: {
      operationId: "cancelCampaign",
      summary: "Cancel a campaign",
      description:
        "Stops everything not yet given to the provider: those recipients are `skipped` with reason `cancelled` (one handed to the provider in the same instant is counted as sent). A `scheduled`, `sending` or `paused` campaign can be cancelled (409 `campaign_state_conflict` naming the state otherwise); cancelling is final.",
      tags: ["Campaigns"],
      parameters: [param("CampaignId")],
      responses: { "200": json(ref("Campaign"), "The cancelled campaign."), ...errors("NotFound", "Conflict", ...serviceErrors) },
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
};
