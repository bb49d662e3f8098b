import type { FromSchema } from "json-schema-to-ts";
import { ADMIN, bodyErrors, body, errors, json, page, param, pathParam, ref, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";
import { emailAddress } from "../../openapi/common.js";
import { ROLES } from "../../members/roles.js";

// The admin API's part of the OpenAPI document; body types are derived from the schemas.

export const PLANS = ["starter", "professional"] as const;
export const KEY_MODES = ["live", "test"] as const;

const plan = { type: "string", enum: PLANS } as const;
const keyMode = {
  type: "string",
  enum: KEY_MODES,
  description: "Data of the two modes never mixes; test keys never deliver to a real recipient.",
} as const;

export const AccountCreate = {
  type: "object",
  additionalProperties: false,
  required: ["name"],
  properties: {
    name: { type: "string", minLength: 1, maxLength: 200 },
    plan: { ...plan, default: "starter" },
    owner_email: { ...emailAddress, description: "The first owner's address: their invitation is mailed, and its link is in the answer (`owner_invitation.url`, once)." },
  },
} as const;
/** `plan` defaults to starter (filled in by validation). */
export type AccountCreateBody = FromSchema<typeof AccountCreate>;

export const ApiKeyCreate = {
  type: "object",
  additionalProperties: false,
  required: ["mode"],
  properties: {
    mode: keyMode,
    name: { type: "string", minLength: 1, maxLength: 200 },
  },
} as const;
export type ApiKeyCreateBody = FromSchema<typeof ApiKeyCreate>;

export const AccountInvitationCreate = {
  type: "object",
  additionalProperties: false,
  required: ["email"],
  properties: {
    email: emailAddress,
    role: { type: "string", enum: ROLES, default: "owner", description: "The role the invitation gives; default owner." },
  },
} as const;
export type AccountInvitationCreateBody = FromSchema<typeof AccountInvitationCreate>;

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

export const schemas: Record<string, JsonSchema> = {
  Plan: plan,
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
  AccountCreate,
  AccountInvitationCreate,
  AccountCreated: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "plan", "created_at"],
    properties: {
      id: { type: "string", readOnly: true },
      name: { type: "string" },
      plan: ref("Plan"),
      created_at: timestamp("When the account was created (RFC 3339, UTC)."),
      owner_invitation: { ...ref("OperatorInvitation"), description: "With `owner_email`: the owner's invitation, mailed; its `url` is shown here once." },
    },
  },
  OperatorInvitation: {
    type: "object",
    additionalProperties: false,
    required: ["id", "email", "role", "expires_at", "url"],
    description: "An invitation, mailed to its address; `url` (the link in the mail) is shown here once: only its hash is stored.",
    properties: {
      id: { type: "string", readOnly: true, examples: ["inv_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      email: { type: "string" },
      role: ref("Role"),
      expires_at: timestamp("When the link stops working (7 days)."),
      url: { type: "string", description: "The one-time link (`/dashboard/accept#token=…`)." },
    },
  },
  AccountPage: page("Account", "A page of accounts, oldest first."),
  KeyMode: keyMode,
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
  ApiKeyCreate,
  ApiKeyPage: page("ApiKey", "A page of API keys (masked), oldest first."),
};

export const parameters: Record<string, ParameterObject> = {
  AccountId: pathParam("id", "The account's id."),
};

// The admin API talks to the gateway's own store only: no service errors but these.
const adminErrors = ["Unauthorized", "InternalError", "Unavailable"] as const;

export const paths: Paths = {
  "/admin/v1/accounts": {
    post: {
      operationId: "createAccount",
      summary: "Create an account",
      tags: ["Admin"],
      security: ADMIN,
      requestBody: body("AccountCreate"),
      responses: {
        "201": { ...json(ref("AccountCreated"), "The new account (and its owner's invitation)."), headers: { ...json(ref("Account"), "").headers, "Cache-Control": { schema: { type: "string" } } } },
        ...errors(...bodyErrors, "Conflict", ...adminErrors),
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
        ...errors("BadRequest", ...adminErrors),
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
        ...errors("NotFound", ...adminErrors),
      },
    },
  },
  "/admin/v1/accounts/{id}/invitations": {
    post: {
      operationId: "createAccountInvitation",
      summary: "Invite someone to an account (by default its owner)",
      description: "Mails a one-time link through the platform; the answer carries it too (`url`, once, `Cache-Control: no-store`). 409 `member_exists` when the address is a member already.",
      tags: ["Admin"],
      security: ADMIN,
      parameters: [param("AccountId")],
      requestBody: body("AccountInvitationCreate"),
      responses: {
        "201": { ...json(ref("OperatorInvitation"), "The invitation, with its link once."), headers: { ...json(ref("Account"), "").headers, "Cache-Control": { required: true, schema: { type: "string", enum: ["no-store"] } } } },
        ...errors(...bodyErrors, "NotFound", "Conflict", ...adminErrors),
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
        ...errors(...bodyErrors, "NotFound", ...adminErrors),
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
        ...errors("BadRequest", "NotFound", ...adminErrors),
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
        ...errors("NotFound", ...adminErrors),
      },
    },
  },
};
