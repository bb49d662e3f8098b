import type { FromSchema } from "json-schema-to-ts";
import { body, bodyErrors, errors, json, noContent, nullableTimestamp, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// Sending domains: the domains an account (per mode) sends From, with the DNS
// records to publish and what their verification found. The delivery service
// keeps them and their DKIM keys (it signs).

export const SenderDomainCreate = {
  type: "object",
  additionalProperties: false,
  required: ["name"],
  properties: {
    name: {
      type: "string",
      minLength: 1,
      maxLength: 300,
      description:
        "A domain of yours (`example.com`) or a subdomain of one (`mail.example.com`): the domain after the `@` of the From addresses to send with. Case and a trailing dot are ignored; an internationalised name is stored as punycode. Refused: IP addresses, `localhost` and names under no public top-level domain, public suffixes (`co.uk`, `github.io`), this platform's own domain.",
      examples: ["example.com"],
    },
  },
} as const;
export type SenderDomainCreateBody = FromSchema<typeof SenderDomainCreate>;

export const SENDER_DOMAIN_STATUSES = ["pending", "verified", "failed"] as const;
export const RECORD_STATES = ["not_checked", "verified", "missing", "mismatch"] as const;
export const RECORD_PURPOSES = ["dkim", "dkim_ed25519", "spf", "dmarc", "return_path"] as const;

export const parameters: Record<string, ParameterObject> = {
  SenderDomainId: pathParam("id", "The sending domain's id (`sdm_…`)."),
};

export const schemas: Record<string, JsonSchema> = {
  SenderDomainCreate,
  SenderDnsRecord: {
    type: "object",
    additionalProperties: false,
    required: ["purpose", "type", "name", "value", "required", "status", "found"],
    properties: {
      purpose: {
        type: "string",
        enum: RECORD_PURPOSES,
        description:
          "`dkim`: the RSA 2048 key every message From the domain is signed with (required). `dkim_ed25519`: an Ed25519 key (RFC 8463), the key of a second signature beside the RSA one (reported, not required). `spf`: the domain's SPF record must include the platform (required; if the domain has an SPF record already, add the `include:` to it: a domain has one SPF record). `dmarc`: a suggestion (`p=none`; any DMARC record counts; reported, not required). `return_path`: the CNAME bounces will come back through (reported, not required).",
      },
      type: { type: "string", enum: ["TXT", "CNAME"] },
      name: { type: "string", description: "The record's full name, e.g. `es1a2b3c4d5er._domainkey.example.com`." },
      value: { type: "string", description: "The value to publish: TXT text (unquoted; split into strings of 255 characters if your DNS provider asks), or the CNAME target." },
      required: { type: "boolean", description: "Whether verification needs this record." },
      status: {
        type: "string",
        enum: RECORD_STATES,
        description: "What the last check found: `verified` (as published), `missing` (nothing of its kind at the name), `mismatch` (something else there: see `found`), `not_checked` (before the first check).",
      },
      found: {
        type: "array",
        items: { type: "string" },
        description: "What the last check found at the name, of the record's kind (TXT texts, CNAME targets); empty when missing.",
      },
    },
  },
  SenderDomain: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "status", "records", "failure_reason", "created_at", "verified_at", "last_checked_at", "next_check_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["sdm_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string", readOnly: true, description: "Lower case, ASCII (punycode)." },
      status: {
        type: "string",
        enum: SENDER_DOMAIN_STATUSES,
        description:
          "`pending`: the required records (DKIM RSA and SPF) are not all seen yet; checked again by itself a minute after it was added, then at doubling intervals up to 6 hours. `verified`: live mail may be From the domain, and is DKIM-signed. `failed`: still not verified 72 hours after it started pending (`failure_reason` says what is missing); POST …/verify starts over.",
      },
      records: { type: "array", items: ref("SenderDnsRecord"), description: "The records to publish in the domain's zone, and what the last check found." },
      failure_reason: { type: ["string", "null"], description: "What is still missing (pending), why it failed, or, for a verified domain whose required records went missing, what since when (it keeps sending, signed, for 72 hours, then fails unless they are back); null when verified and every required record is seen." },
      created_at: timestamp("When the domain was added."),
      verified_at: nullableTimestamp("When it was first verified; null before."),
      last_checked_at: nullableTimestamp("When the records were last looked up; null before."),
      next_check_at: nullableTimestamp("When they are looked up again by themselves (pending: on its backoff; verified: daily, hourly while records are missing); null when not (failed)."),
    },
  },
  SenderDomainPage: page("SenderDomain", "A page of sending domains, oldest first."),
};

const RULES =
  "Live-mode mail (a send's `from`, a template's) may only be From a verified domain of the account (422 `from_domain_not_verified` otherwise); test-mode mail may be From any address. Mail From a domain of the account is DKIM-signed with its key (live mode: once verified) and every message carries a `Feedback-ID`. Domains are per account and mode: a test-mode key adds and sees test-mode domains only.";

export const paths: Paths = {
  "/api/v1/domains": {
    post: {
      operationId: "createSenderDomain",
      summary: "Add a sending domain",
      description: `Generates the domain's DKIM keys (RSA 2048, and Ed25519) and answers the DNS records to publish, the domain \`pending\`. Publish them at your DNS provider, then POST /api/v1/domains/{id}/verify (or wait: pending domains are checked again by themselves). A domain the account has already (in this mode) is a 409 \`sender_domain_exists\` naming it. ${RULES}`,
      tags: ["Sending domains"],
      requestBody: body("SenderDomainCreate"),
      responses: { "201": json(ref("SenderDomain"), "The new domain and the records to publish."), ...errors(...bodyErrors, "Conflict", ...serviceErrors) },
    },
    get: {
      operationId: "listSenderDomains",
      summary: "List sending domains",
      tags: ["Sending domains"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("SenderDomainPage"), "A page of sending domains."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/domains/{id}": {
    get: {
      operationId: "getSenderDomain",
      summary: "Get a sending domain, its records and their state",
      tags: ["Sending domains"],
      parameters: [param("SenderDomainId")],
      responses: { "200": json(ref("SenderDomain"), "The domain."), ...errors("NotFound", ...serviceErrors) },
    },
    delete: {
      operationId: "deleteSenderDomain",
      summary: "Delete a sending domain and its keys",
      description:
        "Deleted at once with its DKIM keys, even while templates or queued mail name it: from then on a live send From it is refused (422), mail already queued goes out unsigned, and its key stops signing on every replica within 30 seconds. Remove its records from your DNS afterwards.",
      tags: ["Sending domains"],
      parameters: [param("SenderDomainId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/domains/{id}/verify": {
    post: {
      operationId: "verifySenderDomain",
      summary: "Check a sending domain's DNS records now",
      description:
        "Looks every record up now and answers each with what was found (`verified`, `missing`, or `mismatch` with the values found). DKIM (RSA) and SPF decide: both seen, the domain is `verified`; a failed domain starts its re-checks over; a verified one whose records are gone is `pending` again. DMARC, the Ed25519 key and the return path are reported, not required. A DNS that does not answer is a 503 `dns_lookup_failed` and changes nothing.",
      tags: ["Sending domains"],
      parameters: [param("SenderDomainId")],
      responses: { "200": json(ref("SenderDomain"), "The domain after the check."), ...errors("NotFound", ...serviceErrors) },
    },
  },
};
