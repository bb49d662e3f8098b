// The OpenAPI 3.1 document of everything the gateway serves, assembled from
// the resources (resources/<name>/schemas.ts) and the parts they share
// (openapi/common.ts). It is the one source of truth for request shapes:
// request bodies, query and header parameters are validated by ajv against
// the very schemas below (http/validation.ts), and the routes check at
// start-up that their method and path match the operation they claim
// (routes/define.ts). Tests hold the router against this document and real
// responses against its response schemas.

import { JSON_MAX_DEPTH } from "./http/json-depth.js";
import * as common from "./openapi/common.js";
import type { HttpMethod, OpenApiDocument, OperationObject, Paths } from "./openapi/types.js";
import { isSecureUrl, sessionCookieName } from "./members/sessions.js";
import { RESOURCES, type Resource } from "./resources/index.js";
import { MJML_MAX_LENGTH, TEMPLATE_BODY_LIMIT_BYTES } from "./resources/templates/schemas.js";

export type { HttpMethod, JsonSchema, OpenApiDocument, OperationObject, ParameterObject } from "./openapi/types.js";
export { DEFAULT_BODY_LIMIT_BYTES } from "./openapi/common.js";
export { findOperation, resolveRef } from "./openapi/lookup.js";
export { MJML_MAX_LENGTH, TEMPLATE_BODY_LIMIT_BYTES } from "./resources/templates/schemas.js";

/**
 * What the edge itself adds to every operation, whatever the resource
 * declares: 400 (every operation refuses unknown query parameters); 429 with
 * `Retry-After` on every operation that takes credentials (the client
 * address's failed-authentication budget); and on every operation that takes
 * an API key or a preference token, its rate-limit class
 * (`x-rate-limit-class`: GET is `read`, other methods `write`, unless the
 * resource says otherwise, as the send and the preference center's export and
 * erasure do) and the RateLimit headers on its own responses (the shared
 * error responses declare them already).
 */
function addEdgeResponses(paths: OpenApiDocument["paths"]): OpenApiDocument["paths"] {
  const out: OpenApiDocument["paths"] = {};
  for (const [path, item] of Object.entries(paths)) {
    out[path] = {};
    for (const [method, operation] of Object.entries(item) as Array<[HttpMethod, OperationObject]>) {
      let responses: Record<string, unknown> = { "400": { $ref: "#/components/responses/BadRequest" }, ...operation.responses };
      const security = operation.security ?? DEFAULT_SECURITY;
      // Budgets per credential: API keys and members' sessions (and tenants), subscribers of preference tokens (and tenants).
      const limited = security.some((requirement) => "ApiKey" in requirement || "Session" in requirement || "PreferenceToken" in requirement);
      // A member's session: its role may refuse (403). Its headers (X-CSRF-Token, X-Mode) are the
      // scheme's, stated once in its description: an API key takes neither.
      const session = security.some((requirement) => "Session" in requirement);
      if (session) responses["403"] ??= { $ref: "#/components/responses/Forbidden" };
      // Any credential may meet the failed-authentication budget of its address.
      if (security.some((requirement) => Object.keys(requirement).length > 0)) {
        responses["429"] ??= { $ref: "#/components/responses/TooManyRequests" };
      }
      if (limited) {
        responses = Object.fromEntries(
          Object.entries(responses).map(([status, response]) => {
            const inline = response as { $ref?: string; headers?: Record<string, unknown> };
            return [status, inline.$ref ? inline : { ...inline, headers: { ...inline.headers, ...common.RATE_LIMIT_HEADERS } }];
          }),
        );
      } else if (operation["x-rate-limit-class"]) {
        throw new Error(`${operation.operationId} takes no API key or preference token: it has no rate-limit class`);
      }
      // In status order, as a reader looks them up.
      out[path][method] = {
        ...operation,
        ...(limited ? { "x-rate-limit-class": operation["x-rate-limit-class"] ?? (method === "get" ? "read" : "write") } : {}),
        responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
      };
    }
  }
  return out;
}

// An integrator's API key, or a member's dashboard session: either one.
const DEFAULT_SECURITY: Array<Record<string, string[]>> = [{ ApiKey: [] }, { Session: [] }];

/** Adds `part` to `into`, refusing a name two resources both define. */
function merge<T>(into: Record<string, T>, part: Record<string, T> | undefined, what: string): void {
  for (const [name, value] of Object.entries(part ?? {})) {
    if (name in into) throw new Error(`two resources define the ${what} ${name}`);
    into[name] = value;
  }
}

/** Builds the document; `serverUrl` (PUBLIC_API_URL) is announced when known. */
export function buildOpenApiDocument(options: { serverUrl?: string; resources?: readonly Resource[] } = {}): OpenApiDocument {
  const resources = options.resources ?? RESOURCES;
  const schemas = { ...common.schemas };
  const parameters = { ...common.parameters };
  const headers = { ...common.headers };
  const paths: OpenApiDocument["paths"] = {};
  const webhooks: Paths = {};
  const tags: OpenApiDocument["tags"] = [];
  for (const resource of resources) {
    merge(schemas, resource.schemas, "schema");
    merge(parameters, resource.parameters, "parameter");
    merge(headers, resource.headers, "header");
    merge(paths, resource.paths, "path");
    if (resource.webhooks) merge(webhooks, resource.webhooks, "webhook");
    for (const tag of resource.tags) {
      if (tags.some((t) => t.name === tag.name)) throw new Error(`two resources define the tag ${tag.name}`);
      tags.push(tag);
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "emailsvc API",
      version: "1.0.0",
      description: [
        "Subscribers, tags, MJML templates and transactional email of the email platform, and the operator's admin API.",
        "",
        "Authenticate with an API key in `X-API-Key` (`sk_live_…` or `sk_test_…`; the key's mode selects live or test data, which never mix), or, as the dashboard does, with a member's session cookie (`Session`: sign in with POST /api/v1/session; changes need `X-CSRF-Token`, `X-Mode` picks the data, and the member's role limits what they may do).",
        `Bodies are JSON (\`Content-Type: application/json\`, at most ${common.DEFAULT_BODY_LIMIT_BYTES / 1024} KiB; ${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB for template create and update, whose \`mjml_content\` may hold ${MJML_MAX_LENGTH} characters); unknown and read-only fields are refused.`,
        `A body may nest arrays and objects at most ${JSON_MAX_DEPTH} levels deep (the body itself is level 1, so \`metadata\` and \`variables\` hold ${JSON_MAX_DEPTH - 1}); deeper is a 400 \`json_too_deep\`.`,
        "Errors are `application/problem+json` (RFC 9457) with a stable `code`.",
        "Lists take `limit` (1..500, default 50) and `cursor`, and answer `{items, next_cursor}`.",
        "Every response carries `X-Request-Id` (yours when you send a sane one).",
        "Rate limits: each API-key operation draws from one budget, `read`, `write` or `send` (its `x-rate-limit-class`), counted per API key and per account and mode; each preference-center operation (preference token) from `read`, `write` or `privacy` (the export and the erasure), counted per subscriber and per account and mode, for this API and the portal page together; the one-click link (`/unsubscribe`) per client address and, a POST, per link. Responses carry `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and `RateLimit-Policy` (IETF httpapi draft); a spent budget is a 429 `rate_limited` with `Retry-After` in seconds. Failed authentications are counted per client address: past their budget, further invalid credentials from that address are a 429 instead of a 401 until it recovers, while valid ones are served. Budgets are the operator's settings (see the gateway README).",
      ].join("\n"),
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    security: DEFAULT_SECURITY,
    tags,
    paths: addEdgeResponses(paths),
    ...(Object.keys(webhooks).length > 0 ? { webhooks } : {}),
    components: {
      schemas,
      responses: common.responses,
      parameters,
      headers,
      securitySchemes: common.securitySchemes(sessionCookieName(isSecureUrl(options.serverUrl))),
    },
  };
}
