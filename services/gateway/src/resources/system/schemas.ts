import { json, PUBLIC, ref } from "../../openapi/kit.js";
import type { JsonSchema, Paths } from "../../openapi/types.js";

// Probes and the document itself: no authentication, no body.

export const schemas: Record<string, JsonSchema> = {
  Health: {
    type: "object",
    additionalProperties: false,
    required: ["status"],
    properties: { status: { type: "string", enum: ["ok"] } },
  },
};

export const paths: Paths = {
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
};
