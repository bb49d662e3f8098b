import { errors, json, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, Paths } from "../../openapi/types.js";

// The dashboard's first page in one call: sends of today and of this month
// (in the caller's time zone) by status, this month's bounce and complaint
// rates, and the campaigns running now.

export const OVERVIEW_STATUSES = ["queued", "sent", "delivered", "deferred", "bounced", "complained", "failed", "suppressed"] as const;

const counts: JsonSchema = {
  type: "object",
  additionalProperties: false,
  required: [...OVERVIEW_STATUSES],
  description: "Emails queued in the period, by their status now.",
  properties: Object.fromEntries(OVERVIEW_STATUSES.map((s) => [s, { type: "integer", minimum: 0 }])),
};

const period = (what: string): JsonSchema => ({
  type: "object",
  additionalProperties: false,
  required: ["since", "total", "counts"],
  properties: { since: timestamp(`The start of ${what} in the time zone asked for (RFC 3339, UTC).`), total: { type: "integer", minimum: 0 }, counts },
});

const rate = (what: string) => ({
  type: ["number", "null"],
  minimum: 0,
  maximum: 1,
  description: `This month: ${what} / emails handed to the provider (sent, delivered, deferred, bounced, complained); null when none was.`,
});

export const schemas: Record<string, JsonSchema> = {
  Overview: {
    type: "object",
    additionalProperties: false,
    required: ["tz", "today", "month", "bounce_rate", "complaint_rate", "running_campaigns"],
    properties: {
      tz: { type: "string", description: "The time zone the periods are in." },
      today: period("today"),
      month: period("this month"),
      bounce_rate: rate("bounced"),
      complaint_rate: rate("complained"),
      running_campaigns: { type: "array", items: ref("Campaign"), description: "Campaigns sending or paused now, oldest first (at most 50)." },
    },
  },
};

export const paths: Paths = {
  "/api/v1/overview": {
    get: {
      operationId: "getOverview",
      summary: "Today's and this month's sends, bounce and complaint rates, running campaigns",
      description: "The account's data in the caller's mode. `tz` (an IANA time zone, default UTC) says where today and this month start; an unknown zone is a 400.",
      tags: ["Overview"],
      parameters: [
        {
          name: "tz",
          in: "query",
          description: "IANA time zone, e.g. `Europe/Zurich`.",
          schema: { type: "string", minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9_+\\-/]+$", default: "UTC" },
        },
      ],
      responses: { "200": json(ref("Overview"), "The overview."), ...errors(...serviceErrors) },
    },
  },
};
