import { ADDRESS_JSON_SCHEMA, ADDRESS_LIMITS } from "@emailsvc/address";
import { ref } from "./kit.js";
import type { JsonSchema, ParameterObject } from "./types.js";

// What every resource shares: the limits stated in the document, the problem
// schema, the error responses, the list parameters and the security schemes.

/** Largest accepted request body; also stated in the document. */
export const DEFAULT_BODY_LIMIT_BYTES = 256 * 1024;

/**
 * An email address as every operation takes it: the platform's one rule
 * (@emailsvc/address), whose pattern the gateway enforces and publishes.
 */
export const emailAddress = {
  ...ADDRESS_JSON_SCHEMA,
  description: `An email address: ASCII only (an internationalised domain in its A-label form, e.g. \`user@xn--bcher-kva.example\`; UTF-8 local parts are not accepted), a local part of letters, digits and the specials of RFC 5322 atext (!#$%&'*+-/=?^_{|}~ and the backquote) in dot-separated parts (no leading, trailing or double dots) of at most ${ADDRESS_LIMITS.localPart} characters, \`@\`, and a domain of dot-separated labels (letters, digits, inner hyphens; at most ${ADDRESS_LIMITS.label} characters each) ending in a top-level domain of letters (or an \`xn--\` A-label); at most ${ADDRESS_LIMITS.address} characters. Quoted local parts, comments and address literals are refused.`,
  "x-pattern-message": "is not a valid email address",
} as const;

export const schemas: Record<string, JsonSchema> = {
  Problem: {
    type: "object",
    description:
      "An error (RFC 9457, `application/problem+json`). `code` is a stable machine code; `errors` names the fields that were wrong.",
    required: ["type", "title", "status", "code", "detail", "request_id"],
    additionalProperties: false,
    properties: {
      type: { type: "string", description: "URI identifying the kind of problem (`urn:emailsvc:problem:<code>`)." },
      title: { type: "string" },
      status: { type: "integer" },
      code: {
        type: "string",
        description:
          "Stable machine code, e.g. `validation_failed`, `invalid_json`, `email_taken`, `not_found`, `invalid_api_key`.",
      },
      detail: { type: "string" },
      request_id: { type: "string", description: "Also sent as the `X-Request-Id` response header." },
      errors: {
        type: "array",
        items: {
          type: "object",
          required: ["field", "message"],
          additionalProperties: false,
          properties: { field: { type: "string" }, message: { type: "string" } },
        },
      },
      existing_id: { type: "string", description: "For conflicts: the id of the resource that already holds the value." },
    },
  },
};

const SECONDS = { type: "string", pattern: "^[0-9]+$" } as const;

const RATE_LIMIT_HEADER_OBJECTS = {
  "RateLimit-Limit": {
    description:
      "Requests of the budget closest to exhaustion: at most this many at once, and as many again per window (`w` in `RateLimit-Policy`).",
    schema: SECONDS,
  },
  "RateLimit-Remaining": { description: "Requests that budget admits right now.", schema: SECONDS },
  "RateLimit-Reset": { description: "Seconds until that budget is whole again.", schema: SECONDS },
  "RateLimit-Policy": {
    description:
      'Every budget the request counted against, as `<limit>;w=<window in seconds>;comment="<class> per API key"` (or `per account and mode`, `failed authentication per client address`), comma-separated.',
    schema: { type: "string", pattern: '^[0-9]+;w=[0-9]+;comment="[^"]*"(, [0-9]+;w=[0-9]+;comment="[^"]*")*$' },
  },
} as const;

/**
 * The RateLimit headers (IETF httpapi draft 06) of API-key operations: on
 * every answer once the key is known, so that clients can pace themselves.
 */
export const RATE_LIMIT_HEADERS = {
  "RateLimit-Limit": { $ref: "#/components/headers/RateLimitLimit" },
  "RateLimit-Remaining": { $ref: "#/components/headers/RateLimitRemaining" },
  "RateLimit-Reset": { $ref: "#/components/headers/RateLimitReset" },
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimitPolicy" },
} as const;

// Error responses, one per status, all with the problem schema. They may
// carry the RateLimit headers: an API-key operation's errors after the key
// was checked do, and a 401 for invalid credentials carries those of the
// failed-authentication budget.
const problem = (description: string, headers?: Record<string, unknown>) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" }, ...RATE_LIMIT_HEADERS, ...headers },
  content: { "application/problem+json": { schema: ref("Problem") } },
});

export const responses: Record<string, unknown> = {
  BadRequest: problem(
    "Bad input: malformed JSON (`invalid_json`), JSON nested too deeply (`json_too_deep`), unknown, read-only or wrongly typed fields, a limit out of range or a tampered cursor (`validation_failed`), or a service's own verdict on a value (e.g. an invalid recipient, MJML that does not compile), with `errors` naming the fields.",
  ),
  Unauthorized: problem("Missing, invalid or revoked credentials.", {
    "WWW-Authenticate": { schema: { type: "string" } },
  }),
  Forbidden: problem(
    "The credential is valid but the operation is not allowed to it: the account's plan does not include it (`plan_required`; the detail names the plan needed), it needs a live-mode key (`live_key_required`), or a test-mode campaign has more recipients than test mode sends in a day (`test_mode_campaign_too_large`).",
  ),
  NotFound: problem("No such resource (also for ids of another account or mode), e.g. `not_found`, `template_not_found`."),
  Conflict: problem(
    "The value is already taken (e.g. `email_taken` or `slug_taken`, with `existing_id`; a custom domain another account holds, `domain_taken`), an idempotency key was used before with another body (`idempotency_key_reused`), or a concurrent change won (`concurrent_update`; retry).",
  ),
  PayloadTooLarge: problem(
    `The body is larger than the operation takes (\`payload_too_large\`): ${DEFAULT_BODY_LIMIT_BYTES / 1024} KiB unless its description states more. Or metadata or variables are larger than the service takes.`,
  ),
  UnsupportedMediaType: problem("The body is not of the operation's media type (`application/json` unless the operation states another)."),
  InternalError: problem("An unexpected error; the request id helps the operator find it in the logs."),
  Unavailable: problem(
    "A service behind the gateway is unavailable (`unavailable`), or this gateway is not connected to the service that serves the operation (`service_unavailable`); retry later.",
  ),
  Timeout: problem("A service behind the gateway did not answer in time."),
  TooManyRequests: problem(
      "A budget is spent (`rate_limited`; the detail names it): this API key's or this account's (in this mode) budget of the operation's class (`x-rate-limit-class`: read, write or send), or, before any credential is checked, this client address's budget of failed authentications. Or, for a send in test mode, the account's test-mode quota of messages a day (`test_mode_quota_exceeded`, `TEST_MODE_DAILY_LIMIT`). Retry after the number of seconds in `Retry-After`; the RateLimit headers describe the request budget.",
      {
        "Retry-After": { required: true, description: "Whole seconds to wait before retrying.", schema: SECONDS },
        ...Object.fromEntries(Object.entries(RATE_LIMIT_HEADER_OBJECTS).map(([name, header]) => [name, { ...header, required: true }])),
      },
  ),
};

export const parameters: Record<string, ParameterObject> = {
  Limit: {
    name: "limit",
    in: "query",
    description: "Page size.",
    schema: { type: "integer", minimum: 1, maximum: 500, default: 50 },
  },
  Cursor: {
    name: "cursor",
    in: "query",
    description: "The `next_cursor` of the previous page. Opaque: a changed cursor is refused with 400.",
    schema: { type: "string", minLength: 1, maxLength: 1024 },
  },
};

export const headers: Record<string, unknown> = {
  RateLimitLimit: RATE_LIMIT_HEADER_OBJECTS["RateLimit-Limit"],
  RateLimitRemaining: RATE_LIMIT_HEADER_OBJECTS["RateLimit-Remaining"],
  RateLimitReset: RATE_LIMIT_HEADER_OBJECTS["RateLimit-Reset"],
  RateLimitPolicy: RATE_LIMIT_HEADER_OBJECTS["RateLimit-Policy"],
  RequestId: {
    description: "The request's id: the caller's `X-Request-Id` when sane (1-128 of `A-Za-z0-9._:-`), else a new one.",
    schema: { type: "string" },
  },
};

export const securitySchemes: Record<string, unknown> = {
  ApiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "An account's API key." },
  AdminToken: { type: "http", scheme: "bearer", description: "The operator token (`ADMIN_TOKEN`)." },
  PreferenceToken: {
    type: "http",
    scheme: "bearer",
    description: "A subscriber's preference token (POST /api/v1/subscribers/{id}/preference-token, or the link in their mail): acts on that subscriber only.",
  },
};
