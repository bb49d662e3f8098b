// Types of the parts of an OpenAPI 3.1 document this gateway writes.

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
  /**
   * The rate-limit budget the operation draws from: an API-key operation's
   * `read`, `write` or `send`; a preference-token operation's `read`,
   * `write` or `privacy` (export, erasure). Absent in a resource's schemas:
   * GET is read, others write; the assembled document states it on every
   * operation that takes one of those credentials.
   */
  "x-rate-limit-class"?: "read" | "write" | "send" | "privacy";
  parameters?: ParameterObject[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, unknown>;
}

export type HttpMethod = "get" | "post" | "patch" | "delete" | "put";

export type Paths = Record<string, Partial<Record<HttpMethod, OperationObject>>>;

export interface TagObject {
  name: string;
  description: string;
}

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  servers?: Array<{ url: string }>;
  security: Array<Record<string, string[]>>;
  tags: TagObject[];
  paths: Paths;
  /** What the platform sends to its users' endpoints (OpenAPI 3.1 `webhooks`): one entry per event type. */
  webhooks?: Paths;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, unknown>;
    parameters: Record<string, ParameterObject>;
    headers: Record<string, unknown>;
    securitySchemes: Record<string, unknown>;
  };
}
