// The OpenAPI 3.1 document of everything the gateway serves. It is the one
// source of truth for request shapes: request bodies and query parameters are
// validated by ajv against the very schemas below (http/validation.ts), and the
// routes check at start-up that their method and path match the operation they
// claim (routes/define.ts). Tests hold the router against this document and
// real responses against its response schemas.

export type JsonSchema = Record<string, unknown>;

export interface ParameterObject {
  name: string;
  in: "query" | "path" | "header";
  required?: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Absent: the document's default (API key). Empty: no authentication. */
  security?: Array<Record<string, string[]>>;
  parameters?: ParameterObject[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, unknown>;
}

export type HttpMethod = "get" | "post" | "patch" | "delete" | "put";

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  servers?: Array<{ url: string }>;
  security: Array<Record<string, string[]>>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Partial<Record<HttpMethod, OperationObject>>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, unknown>;
    parameters: Record<string, ParameterObject>;
    headers: Record<string, unknown>;
    securitySchemes: Record<string, unknown>;
  };
}

/** Largest accepted request body; also stated in the document. */
export const DEFAULT_BODY_LIMIT_BYTES = 256 * 1024;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const timestamp = (description: string) => ({ type: "string", format: "date-time", readOnly: true, description });
const nextCursor = {
  type: ["string", "null"],
  description: "Pass as `cursor` to get the next page; null on the last page.",
};
const page = (item: string, description: string) => ({
  type: "object",
  description,
  additionalProperties: false,
  required: ["items", "next_cursor"],
  properties: { items: { type: "array", items: ref(item) }, next_cursor: nextCursor },
});

const SUBSCRIBER_STATUSES = ["active", "unsubscribed", "bounced", "complained"];

const schemas: Record<string, JsonSchema> = {
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
  SubscriberStatus: { type: "string", enum: SUBSCRIBER_STATUSES },
  Metadata: {
    type: "object",
    description: "Free key/value pairs (any JSON values). Its total size is limited by the service.",
    additionalProperties: true,
  },
  Subscriber: {
    type: "object",
    additionalProperties: false,
    required: ["id", "email", "status", "metadata", "tags", "created_at", "updated_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["sub_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      email: { type: "string", format: "email", description: "Unique per account and mode, compared case-insensitively." },
      status: ref("SubscriberStatus"),
      metadata: ref("Metadata"),
      tags: { type: "array", items: { type: "string" }, description: "Tag names, sorted." },
      created_at: timestamp("When the subscriber was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the subscriber last changed (RFC 3339, UTC)."),
    },
  },
  SubscriberCreate: {
    type: "object",
    additionalProperties: false,
    required: ["email"],
    properties: {
      email: { type: "string", format: "email", minLength: 1 },
      tags: {
        type: "array",
        items: { type: "string", minLength: 1 },
        description: "Tag names; tags that do not exist yet are created.",
      },
      metadata: ref("Metadata"),
      status: { ...ref("SubscriberStatus"), description: "Defaults to `active`." },
    },
  },
  SubscriberUpdate: {
    type: "object",
    additionalProperties: false,
    minProperties: 1,
    description: "Any of the fields; fields left out keep their value. Tags are changed with the tag operations.",
    properties: {
      email: { type: "string", format: "email", minLength: 1 },
      status: ref("SubscriberStatus"),
      metadata: {
        type: "object",
        additionalProperties: true,
        description:
          "Merged into the stored metadata: the keys given replace those stored, other stored keys are kept, and a key whose value is null is removed.",
      },
    },
  },
  SubscriberTagsAdd: {
    type: "object",
    additionalProperties: false,
    required: ["tags"],
    properties: {
      tags: {
        type: "array",
        minItems: 1,
        items: { type: "string", minLength: 1 },
        description: "Tag names to add to the subscriber's tags (never replaces them); unknown names are created.",
      },
    },
  },
  SubscriberPage: page("Subscriber", "A page of subscribers, oldest first."),
  SubscriberEvent: {
    type: "object",
    additionalProperties: false,
    required: ["id", "type", "occurred_at", "actor", "data"],
    description: "One entry of the subscriber's audit trail.",
    properties: {
      id: { type: "string", readOnly: true },
      type: {
        type: "string",
        description:
          "`subscriber.created`, `subscriber.tag_added`, `subscriber.tag_removed`, `subscriber.status_changed`, `subscriber.updated`.",
      },
      occurred_at: timestamp("When the change happened (RFC 3339, UTC)."),
      actor: { type: "string", description: "Who made the change: `api_key:<key id>`, `admin`, `portal` or `system`." },
      data: { type: "object", additionalProperties: true, description: "What changed, by ids and names." },
    },
  },
  SubscriberEventPage: page("SubscriberEvent", "A page of audit-trail entries, oldest first."),
  Tag: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "description", "is_public", "created_at", "updated_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["tag_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string", description: "Unique per account and mode; identifies the tag in subscriber tag operations." },
      description: { type: "string" },
      is_public: { type: "boolean", description: "Public tags can be browsed and joined by subscribers in the preference portal." },
      created_at: timestamp("When the tag was created (RFC 3339, UTC)."),
      updated_at: timestamp("When the tag last changed (RFC 3339, UTC)."),
    },
  },
  TagCreate: {
    type: "object",
    additionalProperties: false,
    required: ["name"],
    properties: {
      name: { type: "string", minLength: 1 },
      description: { type: "string", default: "" },
      is_public: { type: "boolean", default: false },
    },
  },
  TagUpdate: {
    type: "object",
    additionalProperties: false,
    minProperties: 1,
    description: "Any of the fields; fields left out keep their value.",
    properties: {
      name: { type: "string", minLength: 1 },
      description: { type: "string" },
      is_public: { type: "boolean" },
    },
  },
  TagPage: page("Tag", "A page of tags, oldest first."),
  Plan: { type: "string", enum: ["starter", "professional"] },
  Account: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "plan", "created_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["acc_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string" },
      plan: ref("Plan"),
      created_at: timestamp("When the account was created (RFC 3339, UTC)."),
    },
  },
  AccountCreate: {
    type: "object",
    additionalProperties: false,
    required: ["name"],
    properties: {
      name: { type: "string", minLength: 1, maxLength: 200 },
      plan: { ...ref("Plan"), default: "starter" },
    },
  },
  AccountPage: page("Account", "A page of accounts, oldest first."),
  KeyMode: {
    type: "string",
    enum: ["live", "test"],
    description: "Data of the two modes never mixes; test keys never deliver to a real recipient.",
  },
  ApiKey: {
    type: "object",
    additionalProperties: false,
    required: ["id", "account_id", "mode", "name", "masked", "created_at", "revoked_at"],
    properties: apiKeyProperties(),
  },
  ApiKeyCreated: {
    type: "object",
    additionalProperties: false,
    required: ["id", "account_id", "mode", "name", "masked", "created_at", "revoked_at", "key"],
    description: "The new key. `key` is shown here once and can never be read again: only its hash is stored.",
    properties: {
      ...apiKeyProperties(),
      key: { type: "string", readOnly: true, description: "The full key, e.g. `sk_test_…`; send it as `X-API-Key`." },
    },
  },
  ApiKeyCreate: {
    type: "object",
    additionalProperties: false,
    required: ["mode"],
    properties: {
      mode: ref("KeyMode"),
      name: { type: "string", minLength: 1, maxLength: 200 },
    },
  },
  ApiKeyPage: page("ApiKey", "A page of API keys (masked), oldest first."),
  Health: {
    type: "object",
    additionalProperties: false,
    required: ["status"],
    properties: { status: { type: "string", enum: ["ok"] } },
  },
};

function apiKeyProperties(): Record<string, JsonSchema> {
  return {
    id: { type: "string", readOnly: true, examples: ["key_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
    account_id: { type: "string", readOnly: true },
    mode: ref("KeyMode"),
    name: { type: ["string", "null"] },
    masked: { type: "string", readOnly: true, description: "Mode prefix and last four characters, e.g. `sk_test_…abcd`." },
    created_at: timestamp("When the key was created (RFC 3339, UTC)."),
    revoked_at: {
      type: ["string", "null"],
      format: "date-time",
      readOnly: true,
      description: "When the key was revoked; a revoked key is refused at once.",
    },
  };
}

// Error responses, one per status, all with the problem schema.
const problem = (description: string, headers?: Record<string, unknown>) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" }, ...headers },
  content: { "application/problem+json": { schema: ref("Problem") } },
});
const responses: Record<string, unknown> = {
  BadRequest: problem(
    "Bad input: malformed JSON (`invalid_json`), unknown, read-only or wrongly typed fields, a limit out of range or a tampered cursor (`validation_failed`).",
  ),
  Unauthorized: problem("Missing, invalid or revoked credentials.", {
    "WWW-Authenticate": { schema: { type: "string" } },
  }),
  NotFound: problem("No such resource (also for ids of another account or mode)."),
  Conflict: problem("The value is already taken, e.g. `email_taken` with `existing_id`."),
  PayloadTooLarge: problem(`The body is larger than ${DEFAULT_BODY_LIMIT_BYTES / 1024} KiB, or metadata is too large.`),
  UnsupportedMediaType: problem("The body is not `application/json`."),
  InternalError: problem("An unexpected error; the request id helps the operator find it in the logs."),
  Unavailable: problem("A service behind the gateway is unavailable; retry later."),
  Timeout: problem("A service behind the gateway did not answer in time."),
};

const json = (schema: JsonSchema, description: string) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
  content: { "application/json": { schema } },
});
const noContent = (description: string) => ({
  description,
  headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } },
});
const ERROR_STATUS: Record<string, string> = {
  BadRequest: "400",
  Unauthorized: "401",
  NotFound: "404",
  Conflict: "409",
  PayloadTooLarge: "413",
  UnsupportedMediaType: "415",
  InternalError: "500",
  Unavailable: "503",
  Timeout: "504",
};
const errors = (...names: string[]) =>
  Object.fromEntries(names.map((name) => [ERROR_STATUS[name]!, { $ref: `#/components/responses/${name}` }]));
// Every call that reaches a service may also fail in these ways.
const serviceErrors = ["Unauthorized", "InternalError", "Unavailable", "Timeout"];
const bodyErrors = ["BadRequest", "PayloadTooLarge", "UnsupportedMediaType"];
const body = (schema: string) => ({ required: true, content: { "application/json": { schema: ref(schema) } } });
const param = (name: string) => ({ $ref: `#/components/parameters/${name}` }) as unknown as ParameterObject;
const pathParam = (name: string, description: string): ParameterObject => ({
  name,
  in: "path",
  required: true,
  description,
  schema: { type: "string" },
});

const parameters: Record<string, ParameterObject> = {
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
  SubscriberId: pathParam("id", "The subscriber's id."),
  TagId: pathParam("id", "The tag's id."),
  AccountId: pathParam("id", "The account's id."),
};

const ADMIN = [{ AdminToken: [] }];
const PUBLIC: Array<Record<string, string[]>> = [];

const paths: OpenApiDocument["paths"] = {
  "/healthz": {
    get: {
      operationId: "getHealth",
      summary: "Liveness: the process is up",
      tags: ["Probes"],
      security: PUBLIC,
      responses: { "200": json(ref("Health"), "The process is alive.") },
    },
  },
  "/readyz": {
    get: {
      operationId: "getReadiness",
      summary: "Readiness: the store and the services behind the gateway answer",
      description: "503 while a dependency is down and as soon as the gateway starts draining for shutdown.",
      tags: ["Probes"],
      security: PUBLIC,
      responses: {
        "200": json(ref("Health"), "Ready to serve requests."),
        "503": { $ref: "#/components/responses/Unavailable" },
      },
    },
  },
  "/api/v1/openapi.json": {
    get: {
      operationId: "getOpenApiDocument",
      summary: "This document",
      tags: ["Meta"],
      security: PUBLIC,
      responses: { "200": json({ type: "object" }, "The OpenAPI 3.1 document of the gateway.") },
    },
  },
  "/api/v1/subscribers": {
    post: {
      operationId: "createSubscriber",
      summary: "Create a subscriber",
      description: "Tags that do not exist yet are created. Emails are unique per account and mode, compared case-insensitively.",
      tags: ["Subscribers"],
      requestBody: body("SubscriberCreate"),
      responses: {
        "201": json(ref("Subscriber"), "The new subscriber."),
        ...errors(...bodyErrors, "Conflict", ...serviceErrors),
      },
    },
    get: {
      operationId: "listSubscribers",
      summary: "List subscribers",
      tags: ["Subscribers"],
      parameters: [
        param("Limit"),
        { name: "status", in: "query", description: "Only subscribers with this status.", schema: ref("SubscriberStatus") },
        param("Cursor"),
      ],
      responses: { "200": json(ref("SubscriberPage"), "A page of subscribers."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/by-email/{email}": {
    get: {
      operationId: "getSubscriberByEmail",
      summary: "Look a subscriber up by email address",
      description: "The address is URL-encoded in the path (`@` may stay as it is); it is compared case-insensitively.",
      tags: ["Subscribers"],
      parameters: [{ ...pathParam("email", "The email address, URL-encoded."), schema: { type: "string", format: "email" } }],
      responses: { "200": json(ref("Subscriber"), "The subscriber."), ...errors("BadRequest", "NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/{id}": {
    get: {
      operationId: "getSubscriber",
      summary: "Get a subscriber",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      responses: { "200": json(ref("Subscriber"), "The subscriber."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateSubscriber",
      summary: "Update a subscriber",
      description:
        "Changes any of email, status and metadata. Metadata is merged: given keys replace stored ones, other stored keys are kept, and a key set to null is removed.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      requestBody: body("SubscriberUpdate"),
      responses: {
        "200": json(ref("Subscriber"), "The updated subscriber."),
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
    delete: {
      operationId: "deleteSubscriber",
      summary: "Delete a subscriber permanently",
      description: "Removes the subscriber's data, tag links and audit trail. It cannot be undone.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/{id}/tags": {
    post: {
      operationId: "addSubscriberTags",
      summary: "Add tags to a subscriber",
      description: "Adds to the subscriber's tags, never replaces them; tags that do not exist yet are created.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId")],
      requestBody: body("SubscriberTagsAdd"),
      responses: {
        "200": json(ref("Subscriber"), "The subscriber with its tags."),
        ...errors(...bodyErrors, "NotFound", ...serviceErrors),
      },
    },
  },
  "/api/v1/subscribers/{id}/tags/{tag_name}": {
    delete: {
      operationId: "removeSubscriberTag",
      summary: "Remove one tag from a subscriber",
      description: "The other tags stay.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId"), pathParam("tag_name", "The tag's name, URL-encoded.")],
      responses: {
        "200": json(ref("Subscriber"), "The subscriber with its remaining tags."),
        ...errors("NotFound", ...serviceErrors),
      },
    },
  },
  "/api/v1/subscribers/{id}/events": {
    get: {
      operationId: "listSubscriberEvents",
      summary: "Read a subscriber's audit trail",
      description: "Every subscription change, with a UTC timestamp and who made it.",
      tags: ["Subscribers"],
      parameters: [param("SubscriberId"), param("Limit"), param("Cursor")],
      responses: {
        "200": json(ref("SubscriberEventPage"), "A page of audit-trail entries."),
        ...errors("BadRequest", "NotFound", ...serviceErrors),
      },
    },
  },
  "/api/v1/tags": {
    post: {
      operationId: "createTag",
      summary: "Create a tag",
      tags: ["Tags"],
      requestBody: body("TagCreate"),
      responses: { "201": json(ref("Tag"), "The new tag."), ...errors(...bodyErrors, "Conflict", ...serviceErrors) },
    },
    get: {
      operationId: "listTags",
      summary: "List tags",
      tags: ["Tags"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("TagPage"), "A page of tags."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/tags/{id}": {
    get: {
      operationId: "getTag",
      summary: "Get a tag",
      tags: ["Tags"],
      parameters: [param("TagId")],
      responses: { "200": json(ref("Tag"), "The tag."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateTag",
      summary: "Update a tag",
      tags: ["Tags"],
      parameters: [param("TagId")],
      requestBody: body("TagUpdate"),
      responses: {
        "200": json(ref("Tag"), "The updated tag."),
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
    delete: {
      operationId: "deleteTag",
      summary: "Delete a tag",
      description: "Also removes the tag from every subscriber.",
      tags: ["Tags"],
      parameters: [param("TagId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/admin/v1/accounts": {
    post: {
      operationId: "createAccount",
      summary: "Create an account",
      tags: ["Admin"],
      security: ADMIN,
      requestBody: body("AccountCreate"),
      responses: {
        "201": json(ref("Account"), "The new account."),
        ...errors(...bodyErrors, "Unauthorized", "InternalError", "Unavailable"),
      },
    },
    get: {
      operationId: "listAccounts",
      summary: "List accounts",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("Limit"), param("Cursor")],
      responses: {
        "200": json(ref("AccountPage"), "A page of accounts."),
        ...errors("BadRequest", "Unauthorized", "InternalError", "Unavailable"),
      },
    },
  },
  "/admin/v1/accounts/{id}": {
    get: {
      operationId: "getAccount",
      summary: "Get an account",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId")],
      responses: {
        "200": json(ref("Account"), "The account."),
        ...errors("NotFound", "Unauthorized", "InternalError", "Unavailable"),
      },
    },
  },
  "/admin/v1/accounts/{id}/api-keys": {
    post: {
      operationId: "createApiKey",
      summary: "Create an API key",
      description: "The full key is in this response only; it cannot be read again.",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId")],
      requestBody: body("ApiKeyCreate"),
      responses: {
        "201": json(ref("ApiKeyCreated"), "The new key, shown once."),
        ...errors(...bodyErrors, "NotFound", "Unauthorized", "InternalError", "Unavailable"),
      },
    },
    get: {
      operationId: "listApiKeys",
      summary: "List an account's API keys (masked)",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId"), param("Limit"), param("Cursor")],
      responses: {
        "200": json(ref("ApiKeyPage"), "A page of keys, masked."),
        ...errors("BadRequest", "NotFound", "Unauthorized", "InternalError", "Unavailable"),
      },
    },
  },
  "/admin/v1/accounts/{id}/api-keys/{key_id}": {
    delete: {
      operationId: "revokeApiKey",
      summary: "Revoke an API key",
      description:
        "The key is refused at once by the gateway instance that revoked it, and by every other instance within 5 seconds (their key cache). Revoking a revoked key changes nothing.",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId"), pathParam("key_id", "The key's id (`key_…`).")],
      responses: {
        "200": json(ref("ApiKey"), "The revoked key, masked."),
        ...errors("NotFound", "Unauthorized", "InternalError", "Unavailable"),
      },
    },
  },
};

/** Builds the document; `serverUrl` (PUBLIC_API_URL) is announced when known. */
export function buildOpenApiDocument(options: { serverUrl?: string } = {}): OpenApiDocument {
  return {
    openapi: "3.1.0",
    info: {
      title: "emailsvc API",
      version: "1.0.0",
      description: [
        "Subscribers and tags of the email platform, and the operator's admin API.",
        "",
        "Authenticate with an API key in `X-API-Key` (`sk_live_…` or `sk_test_…`; the key's mode selects live or test data, which never mix).",
        "Bodies are JSON (`Content-Type: application/json`, at most 256 KiB); unknown and read-only fields are refused.",
        "Errors are `application/problem+json` (RFC 9457) with a stable `code`.",
        "Lists take `limit` (1..500, default 50) and `cursor`, and answer `{items, next_cursor}`.",
        "Every response carries `X-Request-Id` (yours when you send a sane one).",
      ].join("\n"),
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    security: [{ ApiKey: [] }],
    tags: [
      { name: "Subscribers", description: "Subscribers, their tags and audit trail." },
      { name: "Tags", description: "Tags that group subscribers." },
      { name: "Admin", description: "Accounts and API keys (operator token)." },
      { name: "Probes", description: "Liveness and readiness for orchestrators." },
      { name: "Meta", description: "This document." },
    ],
    paths,
    components: {
      schemas,
      responses,
      parameters,
      headers: {
        RequestId: {
          description: "The request's id: the caller's `X-Request-Id` when sane (1-128 of `A-Za-z0-9._:-`), else a new one.",
          schema: { type: "string" },
        },
      },
      securitySchemes: {
        ApiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "An account's API key." },
        AdminToken: { type: "http", scheme: "bearer", description: "The operator token (`ADMIN_TOKEN`)." },
      },
    },
  };
}

/** Finds an operation by id, with its method and OpenAPI path. */
export function findOperation(
  doc: OpenApiDocument,
  operationId: string,
): { method: HttpMethod; path: string; operation: OperationObject } | undefined {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item) as Array<[HttpMethod, OperationObject]>) {
      if (operation.operationId === operationId) return { method, path, operation };
    }
  }
  return undefined;
}

/** Resolves `{ $ref: "#/components/…" }` one level (parameters and responses). */
export function resolveRef<T>(doc: OpenApiDocument, value: T | { $ref: string }): T {
  if (value && typeof value === "object" && "$ref" in value && typeof value.$ref === "string") {
    let node: unknown = doc;
    for (const part of value.$ref.replace(/^#\//, "").split("/")) node = (node as Record<string, unknown>)[part];
    return node as T;
  }
  return value as T;
}
