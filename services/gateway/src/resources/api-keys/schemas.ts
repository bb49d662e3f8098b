import { body, bodyErrors, errors, json, noContent, param, pathParam, ref } from "../../openapi/kit.js";
import type { ParameterObject, Paths } from "../../openapi/types.js";

// The account's API keys as its members manage them in the dashboard: the
// same keys as the operator's admin API, for the signed-in member's account.
// Session only: an API key cannot mint or revoke keys (a leaked key must not
// be able to make itself a successor).

const SESSION_ONLY: Array<Record<string, string[]>> = [{ Session: [] }];
const storeErrors = ["Unauthorized", "InternalError", "Unavailable"] as const;

export const parameters: Record<string, ParameterObject> = {
  KeyId: pathParam("id", "The key's id (`key_…`)."),
};

export const paths: Paths = {
  "/api/v1/api-keys": {
    get: {
      operationId: "listKeys",
      summary: "List the account's API keys (masked)",
      tags: ["API keys"],
      security: SESSION_ONLY,
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("ApiKeyPage"), "A page of keys, masked, oldest first."), ...errors(...storeErrors) },
    },
    post: {
      operationId: "createKey",
      summary: "Create an API key",
      description: "Developer or above. The full key is in this response only (`Cache-Control: no-store`); it cannot be read again.",
      tags: ["API keys"],
      security: SESSION_ONLY,
      requestBody: body("ApiKeyCreate"),
      responses: {
        "201": { ...json(ref("ApiKeyCreated"), "The new key, shown once."), headers: { ...json(ref("ApiKeyCreated"), "").headers, "Cache-Control": { required: true, schema: { type: "string", enum: ["no-store"] } } } },
        ...errors(...bodyErrors, ...storeErrors),
      },
    },
  },
  "/api/v1/api-keys/{id}": {
    delete: {
      operationId: "revokeKey",
      summary: "Revoke an API key",
      description: "Developer or above. Refused at once by this gateway instance, within 5 seconds by the others.",
      tags: ["API keys"],
      security: SESSION_ONLY,
      parameters: [param("KeyId")],
      responses: { "204": noContent("Revoked (revoking a revoked key changes nothing)."), ...errors("NotFound", ...storeErrors) },
    },
  },
};
