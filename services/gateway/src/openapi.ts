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

/** Longest `mjml_content`, in characters (JSON Schema `maxLength`). */
export const MJML_MAX_LENGTH = 512 * 1024;

/**
 * Largest body of template create and update, the only routes above the
 * default: `mjml_content` may hold 512 Ki characters, and JSON escaping
 * (quotes and newlines of the markup) and multi-byte UTF-8 make its body
 * bigger than that in bytes. Twice the content limit leaves room for both.
 */
export const TEMPLATE_BODY_LIMIT_BYTES = 1024 * 1024;

/** Longest idempotency key (as Stripe's). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** How long the delivery service keeps an idempotency key at least; stated in the document. */
export const IDEMPOTENCY_KEY_RETENTION_HOURS = 24;

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

const nullableTimestamp = (description: string) => ({
  type: ["string", "null"],
  format: "date-time",
  readOnly: true,
  description,
});

const SUBSCRIBER_STATUSES = ["active", "unsubscribed", "bounced", "complained"];
export const TEMPLATE_CATEGORIES = ["transactional", "marketing"];
export const EMAIL_STATUSES = ["queued", "sent", "failed", "bounced", "delivered"];

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
  TemplateCategory: {
    type: "string",
    enum: TEMPLATE_CATEGORIES,
    description: "`marketing` mail carries `List-Unsubscribe` headers; `transactional` mail is what a user's action causes.",
  },
  Template: {
    type: "object",
    additionalProperties: false,
    required: ["id", "slug", "name", "subject", "mjml_content", "category", "version", "variables", "created_at", "updated_at"],
    properties: {
      ...templateSummaryProperties(),
      mjml_content: { type: "string", description: "The MJML markup; may contain `{{variable_name}}`." },
    },
  },
  TemplateSummary: {
    type: "object",
    additionalProperties: false,
    description: "A template without its MJML (lists); read one template for its `mjml_content`.",
    required: ["id", "slug", "name", "subject", "category", "version", "variables", "created_at", "updated_at"],
    properties: templateSummaryProperties(),
  },
  TemplateCreate: {
    type: "object",
    additionalProperties: false,
    required: ["name", "subject", "mjml_content", "category"],
    properties: {
      name: { type: "string", minLength: 1 },
      subject: { type: "string", minLength: 1, description: "May contain `{{variable_name}}`." },
      mjml_content: {
        type: "string",
        minLength: 1,
        maxLength: MJML_MAX_LENGTH,
        description: `MJML markup, at most 512 KiB as UTF-8 (413 \`mjml_too_large\` beyond; more than ${MJML_MAX_LENGTH} characters is refused with 400 before that). Validated strictly: markup that does not compile is a 400 (\`invalid_mjml\`) whose \`errors\` name the line and the problem.`,
      },
      category: ref("TemplateCategory"),
      slug: {
        type: "string",
        minLength: 1,
        description: "Unique per account and mode; used as `template_slug` when sending. Derived from the name when left out.",
      },
    },
  },
  TemplateUpdate: {
    type: "object",
    additionalProperties: false,
    minProperties: 1,
    description:
      "Any of the fields; fields left out keep their value. The slug cannot change. A change of `subject` or `mjml_content` makes a new version.",
    properties: {
      name: { type: "string", minLength: 1 },
      subject: { type: "string", minLength: 1 },
      mjml_content: { type: "string", minLength: 1, maxLength: MJML_MAX_LENGTH, description: "As on create." },
      category: ref("TemplateCategory"),
    },
  },
  TemplatePage: page("TemplateSummary", "A page of templates, without their MJML."),
  Variables: {
    type: "object",
    additionalProperties: true,
    description:
      "Values of the template's `{{variable_name}}` placeholders: names to JSON values (objects for `{{a.b}}`). Values are HTML-escaped in the body. Their total size is limited by the service (413).",
    examples: [{ first_name: "Ada", order: { id: "A-1001", total: "CHF 49.00" } }],
  },
  TemplatePreviewRequest: {
    type: "object",
    additionalProperties: false,
    properties: { variables: { ...ref("Variables"), description: "Values to fill in; default none." } },
  },
  TemplatePreview: {
    type: "object",
    additionalProperties: false,
    required: ["html", "subject", "text", "missing_variables"],
    properties: {
      html: { type: "string", description: "The rendered HTML body." },
      subject: { type: "string", description: "The rendered subject." },
      text: { type: "string", description: "The plain-text part derived from the HTML." },
      missing_variables: {
        type: "array",
        items: { type: "string" },
        description: "Variables the template uses that the call did not give; they were rendered empty.",
      },
    },
  },
  EmailStatus: {
    type: "string",
    enum: EMAIL_STATUSES,
    description:
      "`queued` (accepted, not sent yet), `sent` (the provider took it), `failed` (not sent; see `error`), `bounced` and `delivered` (where the provider reports them).",
  },
  EmailSend: {
    type: "object",
    additionalProperties: false,
    required: ["template_slug", "to"],
    properties: {
      template_slug: { type: "string", minLength: 1, description: "The `slug` of the template to send." },
      to: { type: "string", format: "email", minLength: 1, description: "The one recipient's address." },
      variables: ref("Variables"),
      idempotency_key: {
        type: "string",
        minLength: 1,
        maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
        description: "Optional; the same as the `Idempotency-Key` header (give either, or both with one value).",
      },
    },
  },
  EmailQueued: {
    type: "object",
    additionalProperties: false,
    description:
      "The email as it was accepted. A replay answers with this same body, whatever happened to the email since; read its current state with GET /api/v1/emails/{id}.",
    required: ["id", "status", "to", "template_id", "template_slug", "template_version", "idempotency_key", "queued_at"],
    properties: {
      id: emailId(),
      status: { type: "string", enum: ["queued"] },
      to: { type: "string", format: "email" },
      template_id: { type: "string" },
      template_slug: { type: "string" },
      template_version: { type: "integer", minimum: 1, description: "The template version it is sent with." },
      idempotency_key: { type: ["string", "null"] },
      queued_at: timestamp("When the email was accepted (RFC 3339, UTC)."),
    },
  },
  Email: {
    type: "object",
    additionalProperties: false,
    required: [
      "id",
      "status",
      "to",
      "template_id",
      "template_slug",
      "template_version",
      "idempotency_key",
      "provider",
      "message_id",
      "error",
      "attempts",
      "queued_at",
      "sent_at",
      "failed_at",
      "updated_at",
    ],
    properties: {
      id: emailId(),
      status: ref("EmailStatus"),
      to: { type: "string", format: "email" },
      template_id: { type: "string" },
      template_slug: { type: "string" },
      template_version: {
        type: "integer",
        minimum: 1,
        description: "The template version the email was queued with; it is sent with that one, even if the template changed since.",
      },
      idempotency_key: { type: ["string", "null"], description: "The key it was sent with, if any." },
      provider: { type: ["string", "null"], description: "`smtp` or `sandbox` (never really sent; see GET /api/v1/emails/{id}/sandbox)." },
      message_id: { type: ["string", "null"], description: "The `Message-ID` header of the message, once sent." },
      error: { type: ["string", "null"], description: "Why it failed or bounced (the provider's reason)." },
      attempts: { type: "integer", minimum: 0, description: "Delivery attempts so far (transient failures are retried)." },
      queued_at: timestamp("When the email was accepted (RFC 3339, UTC)."),
      sent_at: nullableTimestamp("When the provider took the message; null until then."),
      failed_at: nullableTimestamp("When the email failed for good; null unless failed."),
      updated_at: timestamp("When the email last changed (RFC 3339, UTC)."),
    },
  },
  EmailPage: page("Email", "A page of emails."),
  SandboxMessage: {
    type: "object",
    additionalProperties: false,
    description: "The whole rendered message the sandbox provider kept instead of sending it.",
    required: ["email_id", "from", "to", "subject", "html", "text", "headers", "captured_at"],
    properties: {
      email_id: { type: "string" },
      from: { type: "string" },
      to: { type: "string" },
      subject: { type: "string" },
      html: { type: "string" },
      text: { type: "string" },
      headers: {
        type: "object",
        additionalProperties: { type: "string" },
        description: "The message's headers, e.g. `Message-ID`, `List-Unsubscribe`.",
      },
      captured_at: timestamp("When the sandbox kept the message (RFC 3339, UTC)."),
    },
  },
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

function templateSummaryProperties(): Record<string, JsonSchema> {
  return {
    id: { type: "string", readOnly: true, examples: ["tpl_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
    slug: { type: "string", description: "Unique per account and mode; send with it as `template_slug`.", examples: ["welcome"] },
    name: { type: "string" },
    subject: { type: "string", description: "May contain `{{variable_name}}`." },
    category: ref("TemplateCategory"),
    version: {
      type: "integer",
      minimum: 1,
      readOnly: true,
      description: "1 on create, +1 on every update that changes the subject or the MJML.",
    },
    variables: {
      type: "array",
      items: { type: "string" },
      readOnly: true,
      description: "Every `{{variable}}` the subject and the body use, sorted.",
    },
    created_at: timestamp("When the template was created (RFC 3339, UTC)."),
    updated_at: timestamp("When the template last changed (RFC 3339, UTC)."),
  };
}

function emailId(): JsonSchema {
  return { type: "string", readOnly: true, examples: ["eml_01jd3x0k8m7y6t5r4q3p2n1m0k"] };
}

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
    "Bad input: malformed JSON (`invalid_json`), unknown, read-only or wrongly typed fields, a limit out of range or a tampered cursor (`validation_failed`), or a service's own verdict on a value (e.g. an invalid recipient, MJML that does not compile), with `errors` naming the fields.",
  ),
  Unauthorized: problem("Missing, invalid or revoked credentials.", {
    "WWW-Authenticate": { schema: { type: "string" } },
  }),
  NotFound: problem("No such resource (also for ids of another account or mode), e.g. `not_found`, `template_not_found`."),
  Conflict: problem(
    "The value is already taken (e.g. `email_taken` or `slug_taken`, with `existing_id`), an idempotency key was used before with another body (`idempotency_key_reused`), or a concurrent change won (`concurrent_update`; retry).",
  ),
  PayloadTooLarge: problem(
    `The body is larger than ${DEFAULT_BODY_LIMIT_BYTES / 1024} KiB (${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB for template create and update; \`payload_too_large\`), or metadata or variables are larger than the service takes.`,
  ),
  UnsupportedMediaType: problem("The body is not `application/json`."),
  InternalError: problem("An unexpected error; the request id helps the operator find it in the logs."),
  Unavailable: problem(
    "A service behind the gateway is unavailable (`unavailable`), or this gateway is not connected to the service that serves the operation (`service_unavailable`); retry later.",
  ),
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
  TemplateId: pathParam("id", "The template's id."),
  EmailId: pathParam("id", "The email's id."),
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    description: `Optional (as Stripe's): a unique key of your choice, 1-${IDEMPOTENCY_KEY_MAX_LENGTH} characters, e.g. a UUID. The same as the body's \`idempotency_key\`; when both are given they must be equal.`,
    schema: { type: "string", minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH },
  },
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
  "/api/v1/templates": {
    post: {
      operationId: "createTemplate",
      summary: "Create a template",
      description: [
        "Stores an MJML template as version 1. The MJML is validated strictly and compiled once per version: markup that does not compile is a 400 whose `errors` name the line and the problem.",
        "`{{variable_name}}` in the subject and the body are filled per message (HTML-escaped in the body); `variables` lists the ones the template uses.",
        `The body may be up to ${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB here (\`mjml_content\` at most ${MJML_MAX_LENGTH} characters).`,
      ].join("\n\n"),
      tags: ["Templates"],
      requestBody: body("TemplateCreate"),
      responses: {
        "201": json(ref("Template"), "The new template, with its `id` and `slug`."),
        ...errors(...bodyErrors, "Conflict", ...serviceErrors),
      },
    },
    get: {
      operationId: "listTemplates",
      summary: "List templates",
      description: "Items leave out `mjml_content`; read one template for it.",
      tags: ["Templates"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("TemplatePage"), "A page of templates."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/templates/{id}": {
    get: {
      operationId: "getTemplate",
      summary: "Get a template",
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      responses: { "200": json(ref("Template"), "The template, at its current version."), ...errors("NotFound", ...serviceErrors) },
    },
    patch: {
      operationId: "updateTemplate",
      summary: "Update a template",
      description: [
        "Changes any of name, subject, mjml_content and category; the slug cannot change. Two updates at once: one of them may get a 409 `concurrent_update`; retry it.",
        "A change of the subject or the MJML makes a new version (`version` + 1); emails queued before keep the version they were queued with.",
        `The body may be up to ${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB here.`,
      ].join("\n\n"),
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      requestBody: body("TemplateUpdate"),
      responses: {
        "200": json(ref("Template"), "The updated template."),
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
    delete: {
      operationId: "deleteTemplate",
      summary: "Delete a template",
      description: "It can no longer be read, previewed or sent.",
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      responses: { "204": noContent("Deleted."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/templates/{id}/preview": {
    post: {
      operationId: "previewTemplate",
      summary: "Render a template without sending it",
      description:
        "Renders the current version with the given variables: the HTML, the subject and the plain-text part. Variables the template uses but the call did not give are listed in `missing_variables` (and rendered empty), not silently blank. Nothing is sent.",
      tags: ["Templates"],
      parameters: [param("TemplateId")],
      requestBody: body("TemplatePreviewRequest"),
      responses: {
        "200": json(ref("TemplatePreview"), "The rendered message."),
        ...errors(...bodyErrors, "NotFound", ...serviceErrors),
      },
    },
  },
  "/api/v1/emails/send": {
    post: {
      operationId: "sendEmail",
      summary: "Send a transactional email",
      description: [
        "Queues one email to one recipient, rendered from the template's current version, and answers at once with **202 Accepted** and the email as queued (`status: queued`). The email goes out through the queue; follow it with GET /api/v1/emails/{id} (the `Location` header).",
        "Test-mode keys never deliver: their mail is kept by the sandbox (GET /api/v1/emails/{id}/sandbox).",
        "**Idempotency** (as Stripe's): give a key in the `Idempotency-Key` header or in `idempotency_key` (both: they must be equal, else 400). " +
          "A repeat with the same key and the same body sends no second email and answers with the original result: status 202 and the same body, with the header `Idempotent-Replayed: true`. " +
          "The same key with another body is a 409 `idempotency_key_reused`. Two concurrent requests with one key send one email. " +
          `Keys are kept at least ${IDEMPOTENCY_KEY_RETENTION_HOURS} hours, per account and mode. Retry a send that timed out or failed with a 5xx with the same key.`,
        "Nothing is sent for bad input: an unknown `template_slug` (404 `template_not_found`, also for another account's templates), an invalid recipient (400), `variables` that are not an object (400) or too large (413).",
      ].join("\n\n"),
      tags: ["Emails"],
      parameters: [param("IdempotencyKey")],
      requestBody: body("EmailSend"),
      responses: {
        "202": {
          description: "Accepted and queued; also the answer to a replay (then with `Idempotent-Replayed: true`).",
          headers: {
            "X-Request-Id": { $ref: "#/components/headers/RequestId" },
            Location: { $ref: "#/components/headers/EmailLocation" },
            "Idempotent-Replayed": { $ref: "#/components/headers/IdempotentReplayed" },
          },
          content: { "application/json": { schema: ref("EmailQueued") } },
        },
        ...errors(...bodyErrors, "NotFound", "Conflict", ...serviceErrors),
      },
    },
  },
  "/api/v1/emails": {
    get: {
      operationId: "listEmails",
      summary: "List emails",
      tags: ["Emails"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("EmailPage"), "A page of emails."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/emails/{id}": {
    get: {
      operationId: "getEmail",
      summary: "Get an email and its delivery status",
      tags: ["Emails"],
      parameters: [param("EmailId")],
      responses: { "200": json(ref("Email"), "The email."), ...errors("NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/emails/{id}/sandbox": {
    get: {
      operationId: "getSandboxMessage",
      summary: "Read what a sandboxed email would have sent",
      description:
        "The sandbox provider (the default of `npm start`, and always for test-mode keys) keeps the whole rendered message instead of sending it: sender, recipient, subject, HTML, text and headers. 404 for an email that was not sandboxed (or not rendered yet).",
      tags: ["Emails"],
      parameters: [param("EmailId")],
      responses: { "200": json(ref("SandboxMessage"), "The kept message."), ...errors("NotFound", ...serviceErrors) },
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
        "Subscribers, tags, MJML templates and transactional email of the email platform, and the operator's admin API.",
        "",
        "Authenticate with an API key in `X-API-Key` (`sk_live_…` or `sk_test_…`; the key's mode selects live or test data, which never mix).",
        `Bodies are JSON (\`Content-Type: application/json\`, at most ${DEFAULT_BODY_LIMIT_BYTES / 1024} KiB; ${TEMPLATE_BODY_LIMIT_BYTES / 1024} KiB for template create and update); unknown and read-only fields are refused.`,
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
      { name: "Templates", description: "MJML templates with `{{variables}}`, versioned, and their preview." },
      { name: "Emails", description: "Transactional sending (idempotent), delivery status, and the sandbox." },
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
        EmailLocation: {
          description: "The email's address, `/api/v1/emails/{id}`, where its delivery status can be followed.",
          required: true,
          schema: { type: "string" },
        },
        IdempotentReplayed: {
          description: "`true` when this answer is the replay of an earlier request with the same idempotency key; absent otherwise.",
          schema: { type: "string", enum: ["true"] },
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
