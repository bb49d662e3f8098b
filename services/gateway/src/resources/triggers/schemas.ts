import { TRIGGER_EVENT_TYPE_NAMES, TRIGGER_EVENT_TYPES_WITH_TAG, TRIGGER_EVENT_TYPES_WITHOUT_TAG } from "@emailsvc/proto";
import type { FromSchema } from "json-schema-to-ts";
import { bodyErrors, body, errors, json, noContent, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";
import { tagName } from "../tags/schemas.js";

// Triggers' part of the OpenAPI document; body types are derived from the schemas,
// the event types from their one list (proto/trigger-event-types.ts).

export const EVENT_TYPE_NAMES = TRIGGER_EVENT_TYPE_NAMES;

const eventType = { type: "string", enum: EVENT_TYPE_NAMES, description: "The event that fires it (GET /api/v1/event-types)." } as const;
const templateId = { type: "string", minLength: 1, maxLength: 100, description: "The id of one of your templates." } as const;
const description = { type: "string", maxLength: 500 } as const;
const delaySeconds = {
  type: "integer",
  minimum: 0,
  maximum: 2592000,
  description: "How long after the event the mail goes out, in seconds (at most 30 days); kept across restarts.",
} as const;
const tag = {
  ...tagName,
  description: `For ${TRIGGER_EVENT_TYPES_WITH_TAG.map((name) => `\`${name}\``).join(" and ")} only: fire only for this tag (by name, ignoring case). A name that is none of your tags is a 400 \`unknown_tags\`.`,
} as const;

export const TriggerCreate = {
  type: "object",
  additionalProperties: false,
  required: ["event_type", "template_id"],
  properties: { event_type: eventType, template_id: templateId, description: { ...description, default: "" }, delay_seconds: { ...delaySeconds, default: 0 }, tag },
  // Only tag events are about a tag.
  if: { properties: { event_type: { enum: TRIGGER_EVENT_TYPES_WITHOUT_TAG } }, required: ["event_type"] },
  then: { properties: { tag: false } },
} as const;
export type TriggerCreateBody = FromSchema<typeof TriggerCreate>;

export const TriggerUpdate = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description:
    "Any of the fields; fields left out keep their value. `is_active: false` stops the trigger (fires not yet sent are skipped); `is_active: true` needs a live template (the one given, else the trigger's own: 404 `template_not_found`) and clears `disabled_reason`.",
  properties: { is_active: { type: "boolean" }, description, template_id: templateId, delay_seconds: delaySeconds, tag },
} as const;
export type TriggerUpdateBody = FromSchema<typeof TriggerUpdate>;

export const schemas: Record<string, JsonSchema> = {
  Trigger: {
    type: "object",
    additionalProperties: false,
    required: [
      "id",
      "event_type",
      "template_id",
      "description",
      "is_active",
      "delay_seconds",
      "tag",
      "created_at",
      "updated_at",
      "disabled_reason",
      "last_failure",
    ],
    properties: {
      id: { type: "string", readOnly: true, examples: ["trg_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      event_type: { type: "string", enum: EVENT_TYPE_NAMES },
      template_id: { type: "string" },
      description: { type: "string" },
      is_active: { type: "boolean", description: "A new trigger is active." },
      delay_seconds: { type: "integer", minimum: 0 },
      tag: { type: "string", description: "The tag a tag event must be about; empty for any." },
      created_at: timestamp("When the trigger was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the trigger last changed (RFC 3339, UTC)."),
      disabled_reason: {
        type: ["string", "null"],
        enum: ["template_deleted", null],
        description:
          "Why the platform turned the trigger off, or null: `template_deleted` when its template was gone at a fire (every later fire would fail). Setting `is_active` again, with a live template, clears it.",
      },
      last_failure: {
        type: ["object", "null"],
        additionalProperties: false,
        required: ["reason", "at"],
        description: "The last fire that could not be sent, or null: nothing is dropped in silence.",
        properties: {
          reason: { type: "string", description: "A stable code: `template_not_found`, or why delivery refused the send (e.g. `validation_failed`)." },
          at: timestamp("When (RFC 3339, UTC)."),
        },
      },
    },
  },
  TriggerCreate,
  TriggerUpdate,
  TriggerPage: page("Trigger", "A page of triggers, oldest first."),
  EventTypeList: {
    type: "object",
    additionalProperties: false,
    required: ["items"],
    properties: {
      items: {
        type: "array",
        items: {
          type: "object",
          additionalProperties: false,
          required: ["name", "description", "takes_tag"],
          properties: { name: { type: "string" }, description: { type: "string" }, takes_tag: { type: "boolean" } },
        },
      },
    },
  },
};

export const parameters: Record<string, ParameterObject> = {
  TriggerId: pathParam("id", "The trigger's id."),
};

export const paths: Paths = {
  "/api/v1/triggers": {
    post: {
      operationId: "createTrigger",
      summary: "Create a trigger",
      description:
        "Active at once: each later event of `event_type` sends the template to its subscriber (once per event and trigger, even when the event is delivered again). The template must be one of yours (404 `template_not_found`).",
      tags: ["Triggers"],
      requestBody: body("TriggerCreate"),
      responses: { "201": json(ref("Trigger"), "The new trigger."), ...errors(...bodyErrors, "NotFound", ...serviceErrors) },
    },
    get: {
      operationId: "listTriggers",
      summary: "List triggers",
      tags: ["Triggers"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("TriggerPage"), "A page of triggers."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/triggers/{id}": {
    get: {
      operationId: "getTrigger",
      summary: "Get a trigger",
      tags: ["Triggers"],
      parameters: [param("TriggerId")],
      responses: { "200": json(ref("Trigger"), "The trigger."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateTrigger",
      summary: "Change a trigger",
      tags: ["Triggers"],
      parameters: [param("TriggerId")],
      requestBody: body("TriggerUpdate"),
      responses: { "200": json(ref("Trigger"), "The changed trigger."), ...errors(...bodyErrors, "NotFound", ...serviceErrors) },
    },
    delete: {
      operationId: "deleteTrigger",
      summary: "Delete a trigger",
      tags: ["Triggers"],
      parameters: [param("TriggerId")],
      responses: { "204": noContent("Deleted; fires not yet sent are skipped."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/event-types": {
    get: {
      operationId: "listEventTypes",
      summary: "List the events triggers fire on",
      tags: ["Triggers"],
      responses: { "200": json(ref("EventTypeList"), "Every event type."), ...errors(...serviceErrors) },
    },
  },
};
