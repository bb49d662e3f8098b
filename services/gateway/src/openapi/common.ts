import { ADDRESS_JSON_SCHEMA, ADDRESS_LIMITS } from "@emailsvc/address";
import { codesWithStatus, ERROR_CODES } from "../http/error-codes.js";
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
          "Stable machine code; each error response lists the codes of its status, with their titles (`title` is fixed per code).",
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
      'Every budget the request counted against, as `<limit>;w=<window in seconds>;comment="<class> per API key"` (or `<class> per account and mode`, `<class> per subscriber`, `preference <class> per account and mode`, `failed authentication per client address`, `test-mode messages per account`), comma-separated.',
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

/** The headers every 429 carries: when to retry, and the budget that refused. */
export const RATE_LIMITED_HEADERS = {
  "Retry-After": { required: true, description: "Whole seconds to wait before retrying.", schema: SECONDS },
  ...Object.fromEntries(Object.entries(RATE_LIMIT_HEADER_OBJECTS).map(([name, header]) => [name, { ...header, required: true }])),
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

/**
 * An error response's description: what it means, then every code of that
 * status from the one table (http/error-codes.ts) with its title and when it
 * is answered, so the document and the answers cannot disagree.
 */
function withCodes(status: number, intro: string): string {
  const codes = codesWithStatus(status).map((code) => `- \`${code}\` (${ERROR_CODES[code].title}): ${ERROR_CODES[code].when}.`);
  return `${intro} The \`code\` is one of:\n\n${codes.join("\n")}`;
}

export const responses: Record<string, unknown> = {
  BadRequest: problem(withCodes(400, "Bad input, refused before anything changed; `errors` names the fields.")),
  Unauthorized: problem(withCodes(401, "Missing, invalid or revoked credentials."), {
    "WWW-Authenticate": { schema: { type: "string" } },
  }),
  Forbidden: problem(withCodes(403, "The credential is valid but the operation is not allowed to it.")),
  NotFound: problem(withCodes(404, "No such resource (also for ids of another account or mode).")),
  Conflict: problem(withCodes(409, "The change clashes with what exists; nothing changed.")),
  UnprocessableContent: problem(withCodes(422, "Well-formed, but the account's present state does not allow it (e.g. a From on a domain not verified); nothing changed.")),
  PayloadTooLarge: problem(
    withCodes(413, `Too large: the body is larger than the operation takes (${DEFAULT_BODY_LIMIT_BYTES / 1024} KiB unless its description states more), or a value is larger than the service takes.`),
  ),
  UnsupportedMediaType: problem(withCodes(415, "The body is not of the operation's media type (`application/json` unless the operation states another).")),
  InternalError: problem(withCodes(500, "An unexpected error; the request id helps the operator find it in the logs.")),
  Unavailable: problem(withCodes(503, "Not available right now; retry later.")),
  Timeout: problem(withCodes(504, "A service behind the gateway did not answer in time.")),
  TooManyRequests: problem(
    withCodes(
      429,
      "A budget is spent: this API key's or this account's (in this mode) budget of the operation's class (`x-rate-limit-class`: read, write or send); for the preference-center API, the subscriber's or this account's budget of its class (read, write, or privacy: export and erasure); or this client address's budget of failed authentications, once it is spent (valid credentials are still served); or, for a send in test mode, the account's test-mode quota of messages a day (`TEST_MODE_DAILY_LIMIT`). Retry after the number of seconds in `Retry-After`; the RateLimit headers describe the budget that refused (the quota's or the subscriber's when a service refused, never the API key's beside them).",
    ),
    RATE_LIMITED_HEADERS,
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

/** The security schemes; the session cookie's name follows the API's scheme (`__Host-` over https). */
export const securitySchemes = (sessionCookie: string): Record<string, unknown> => ({
  ApiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "An account's API key." },
  Session: {
    type: "apiKey",
    in: "cookie",
    name: sessionCookie,
    description:
      "A member's dashboard session (POST /api/v1/session sets it: HttpOnly, SameSite=Strict, Secure over https). With it, changes (POST, PUT, PATCH, DELETE) also need the header `X-CSRF-Token` (the session's `csrf_token`; 403 `csrf_failed` without it), and the header `X-Mode: live|test` picks the data (default live; another value is a 400). The member's role decides what they may do (403 `role_forbidden`, naming the role needed). An API key takes neither header: its mode is its own.",
  },
  AdminToken: { type: "http", scheme: "bearer", description: "The operator token (`ADMIN_TOKEN`)." },
  PreferenceToken: {
    type: "http",
    scheme: "bearer",
    description: "A subscriber's preference token (POST /api/v1/subscribers/{id}/preference-token, or the link in their mail): acts on that subscriber only.",
  },
});
