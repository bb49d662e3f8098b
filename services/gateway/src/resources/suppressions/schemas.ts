import type { FromSchema } from "json-schema-to-ts";
import { visibleTextRule } from "@emailsvc/text";
import { bodyErrors, body, errors, json, lineText, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import { emailAddress } from "../../openapi/common.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// The suppression list's part of the OpenAPI document.

export const SUPPRESSION_REASONS = ["hard_bounce", "complaint", "unsubscribed", "manual", "erased"] as const;

/** Longest reason a removal gives (the subscribers service's REMOVAL_REASON_MAX). */
export const REMOVAL_REASON_MAX = 500;

export const SuppressionCreate = {
  type: "object",
  additionalProperties: false,
  required: ["email", "reason"],
  properties: {
    email: { ...emailAddress, description: `The address to suppress. ${emailAddress.description}` },
    reason: { type: "string", enum: ["manual"], description: "Only `manual`: bounces and complaints are added by the platform, erasures by the erasure." },
  },
} as const;
export type SuppressionCreateBody = FromSchema<typeof SuppressionCreate>;

export const schemas: Record<string, JsonSchema> = {
  SuppressionReason: {
    type: "string",
    enum: SUPPRESSION_REASONS,
    description:
      "`hard_bounce` (refused for good, or soft bounces repeated: no mail at all), `complaint` (the recipient called our mail spam: no mail at all), `unsubscribed`, `manual` (added through this API) and `erased` (erased at its owner's request: only a keyed hash is kept) stop marketing mail; transactional mail still goes to them.",
  },
  Suppression: {
    type: "object",
    additionalProperties: false,
    required: ["id", "email", "reason", "source", "email_id", "created_at"],
    properties: {
      id: { type: "string", readOnly: true, description: "The entry's id: a keyed hash of the address (all an erased person's entry keeps)." },
      email: { type: ["string", "null"], description: "The address; null once its owner was erased (the entry keeps refusing what it refused, by the hash)." },
      reason: ref("SuppressionReason"),
      source: { type: "string", description: "Who added it: `api` (by hand), `delivery` (a bounce or complaint), `erasure`." },
      email_id: { type: ["string", "null"], description: "The email whose bounce or complaint added it; null otherwise." },
      created_at: timestamp("When the address was suppressed (RFC 3339, UTC)."),
    },
  },
  SuppressionCreate,
  SuppressionPage: page("Suppression", "A page of the suppression list, in entry id order."),
};

export const parameters: Record<string, ParameterObject> = {
  SuppressionRemovalReason: {
    name: "reason",
    in: "query",
    required: true,
    description: "Why the address may be mailed again (kept in the audit trail).",
    schema: { ...lineText(REMOVAL_REASON_MAX, visibleTextRule(REMOVAL_REASON_MAX)) },
  },
};

export const paths: Paths = {
  "/api/v1/suppressions": {
    get: {
      operationId: "listSuppressions",
      summary: "List the suppression list",
      description: "The addresses this account (and mode) does not mail, with why, who added them and when; or, with `email`, whether one address is on it.",
      tags: ["Suppressions"],
      parameters: [
        param("Limit"),
        { name: "reason", in: "query", description: "Only entries of this reason.", schema: ref("SuppressionReason") },
        {
          name: "email",
          in: "query",
          description: "Search for one address (any case): its entry, if it is on the list (at most one item). An invalid address is a 400.",
          schema: emailAddress,
        },
        param("Cursor"),
      ],
      responses: { "200": json(ref("SuppressionPage"), "A page of the list."), ...errors("BadRequest", ...serviceErrors) },
    },
    post: {
      operationId: "createSuppression",
      summary: "Suppress an address",
      description: "Adds the address with reason `manual`: marketing mail no longer goes to it. An address on the list already keeps its entry (200).",
      tags: ["Suppressions"],
      requestBody: body("SuppressionCreate"),
      responses: {
        "201": json(ref("Suppression"), "Added."),
        "200": json(ref("Suppression"), "The address was on the list already: its entry, unchanged."),
        ...errors(...bodyErrors, ...serviceErrors),
      },
    },
  },
  "/api/v1/suppressions/{email}": {
    delete: {
      operationId: "deleteSuppression",
      summary: "Remove an address from the suppression list",
      description:
        "With a `reason`, kept in the audit trail (of the address's subscriber, if any). The subscriber's own status (`bounced`, `complained`) is not changed: update the subscriber for that. An erased person's entry has no address to name and stays until they opt in again (a create with `resubscribe`).",
      tags: ["Suppressions"],
      parameters: [pathParam("email", "The email address, URL-encoded.", emailAddress), param("SuppressionRemovalReason")],
      responses: { "200": json(ref("Suppression"), "The entry removed."), ...errors("BadRequest", "NotFound", ...serviceErrors) },
    },
  },
};
