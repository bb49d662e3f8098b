import type { FromSchema } from "json-schema-to-ts";
import { ADMIN, body, bodyErrors, errors, json, noContent, param, ref, timestamp, nullableTimestamp } from "../../openapi/kit.js";
import type { JsonSchema, Paths } from "../../openapi/types.js";

// Custom portal domains (Professional plan): the account's preference page on
// a host of its own. One per ACCOUNT (live and test mode share it).

export const CustomDomainSet = {
  type: "object",
  additionalProperties: false,
  required: ["domain"],
  properties: {
    domain: {
      type: "string",
      minLength: 1,
      maxLength: 300,
      description:
        "A host of your own domain, one label at least below it (e.g. `preferences.example.com`; not `example.com`). Case and a trailing dot are ignored; an internationalised name is taken and stored as punycode. Refused: apex domains, IP addresses, wildcards, this platform's own domains.",
      examples: ["preferences.example.com"],
    },
  },
} as const;
export type CustomDomainSetBody = FromSchema<typeof CustomDomainSet>;

export const CUSTOM_DOMAIN_STATES = ["pending_dns", "issuing", "active", "failed"] as const;

export const schemas: Record<string, JsonSchema> = {
  CustomDomainSet,
  CustomDomain: {
    type: "object",
    additionalProperties: false,
    required: ["domain", "state", "dns_record", "reason", "url", "last_check_at", "next_check_at", "created_at", "updated_at", "activated_at"],
    properties: {
      domain: { type: "string", readOnly: true, description: "Lower case, ASCII (punycode)." },
      state: {
        type: "string",
        enum: CUSTOM_DOMAIN_STATES,
        description:
          "`pending_dns`: the CNAME is not seen yet (checked again with backoff; `reason` says what is seen), or it is and the certificate is queued. `issuing`: the certificate and the routing exist, the certificate authority is validating. `active`: links in new mail use the domain. `failed`: `reason` says what to fix; retried automatically while `next_check_at` is set, else set the domain again.",
      },
      dns_record: {
        type: "object",
        additionalProperties: false,
        required: ["name", "type", "target"],
        description: "The record to create at your DNS provider.",
        properties: {
          name: { type: "string" },
          type: { type: "string", enum: ["CNAME"] },
          target: { type: "string", description: "The platform's target (`CUSTOM_DOMAIN_TARGET`)." },
        },
      },
      reason: { type: ["string", "null"], description: "What is wrong or what happens next; null when nothing is." },
      url: { type: ["string", "null"], description: "`https://<domain>/preferences` once active; null before." },
      last_check_at: nullableTimestamp("When the DNS or the certificate was last looked at; null before the first check."),
      next_check_at: nullableTimestamp("When it is looked at again; null when nothing happens by itself (set the domain again)."),
      created_at: timestamp("When this domain was set."),
      updated_at: timestamp("When its state last changed."),
      activated_at: nullableTimestamp("When it first became active; null before."),
    },
  },
};

const domainErrors = errors("BadRequest", "Forbidden", "NotFound", "Conflict", "Unauthorized", "InternalError", "Unavailable", "Timeout");

const STATES_TEXT =
  "Then the platform checks the CNAME (`pending_dns`, re-checked with backoff), asks for a certificate within its issuance budget (`issuing`), and once the certificate is ready the domain is `active`: preference links in new mail are `https://<domain>/preferences?token=…`. A certificate that fails is retried with backoff a few times; `reason` always says what is wrong.";

export const paths: Paths = {
  "/api/v1/settings/preference-center/custom-domain": {
    get: {
      operationId: "getCustomDomain",
      summary: "Your portal's custom domain and its state",
      description: "The account's custom domain (one per account; live and test mode share it): its state, the CNAME to create, and what is checked when.",
      tags: ["Custom domain"],
      responses: { "200": json(ref("CustomDomain"), "The custom domain."), ...domainErrors },
    },
    put: {
      operationId: "setCustomDomain",
      summary: "Serve your portal from your own domain",
      description: `Professional plan (else 403 \`plan_required\`), with a live-mode key (else 403 \`live_key_required\`). Create a CNAME record from the domain to the \`dns_record.target\` this answer names, at any time. ${STATES_TEXT} Setting another domain replaces the current one; setting the same again changes nothing unless it failed (then it starts over). A domain another account holds is a 409 \`domain_taken\`. On a deployment without custom domains: 503 \`custom_domains_not_enabled\`.`,
      tags: ["Custom domain"],
      requestBody: body("CustomDomainSet"),
      responses: { "200": json(ref("CustomDomain"), "The custom domain as it stands now."), ...errors(...bodyErrors), ...domainErrors },
    },
    delete: {
      operationId: "deleteCustomDomain",
      summary: "Stop using your custom domain",
      description: "A live-mode key. Links in new mail use the platform's portal address again at once (within 30 seconds); the certificate and routing are deleted in the background, and the domain is free for anyone at once.",
      tags: ["Custom domain"],
      responses: { "204": noContent("Removed."), ...domainErrors },
    },
  },
  "/admin/v1/accounts/{id}/custom-domain": {
    get: {
      operationId: "getAccountCustomDomain",
      summary: "An account's custom domain",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId")],
      responses: { "200": json(ref("CustomDomain"), "The custom domain."), ...domainErrors },
    },
    put: {
      operationId: "setAccountCustomDomain",
      summary: "Set an account's custom domain",
      description: `As the account's own PUT /api/v1/settings/preference-center/custom-domain (the plan is checked alike: 403 \`plan_required\`). ${STATES_TEXT}`,
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId")],
      requestBody: body("CustomDomainSet"),
      responses: { "200": json(ref("CustomDomain"), "The custom domain as it stands now."), ...errors(...bodyErrors), ...domainErrors },
    },
    delete: {
      operationId: "deleteAccountCustomDomain",
      summary: "Remove an account's custom domain",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId")],
      responses: { "204": noContent("Removed."), ...domainErrors },
    },
  },
};
