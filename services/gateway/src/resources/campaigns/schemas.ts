import type { FromSchema } from "json-schema-to-ts";
import { bodyErrors, body, errors, json, lineText, noContent, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
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

export const schemas: Record<string, JsonSchema> = {
  TagFilter,
  Campaign: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "template_id", "tag_filter", "status", "created_at", "updated_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["cmp_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string" },
      template_id: { type: "string" },
      tag_filter: ref("TagFilter"),
      status: {
        type: "string",
        enum: CAMPAIGN_STATUSES,
        description: "`draft` until sent; only a draft can be changed or deleted (409 `campaign_not_draft` otherwise).",
      },
      created_at: timestamp("When the campaign was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the campaign last changed (RFC 3339, UTC)."),
    },
  },
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
