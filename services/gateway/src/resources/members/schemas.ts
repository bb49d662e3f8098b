import type { FromSchema } from "json-schema-to-ts";
import { emailAddress } from "../../openapi/common.js";
import { body, bodyErrors, errors, json, lineText, noContent, page, param, pathParam, PUBLIC, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";
import { ROLES } from "../../members/roles.js";
import { linkToken, newPassword } from "../session/schemas.js";

// An account's people: its members (roles), invitations, and the account as
// a member sees it. Only a member's session reaches these (an API key is no
// member and makes none): an admin manages members and invitations; an admin
// may not make, change or remove an owner (only an owner may), and an
// account keeps at least one owner.

const SESSION_ONLY: Array<Record<string, string[]>> = [{ Session: [] }];
const role = { type: "string", enum: ROLES } as const;
const memberName = lineText(200, "must be one line of visible text");

export const InvitationCreate = {
  type: "object",
  additionalProperties: false,
  required: ["email", "role"],
  properties: { email: emailAddress, role },
} as const;
export type InvitationCreateBody = FromSchema<typeof InvitationCreate>;

export const InvitationAccept = {
  type: "object",
  additionalProperties: false,
  required: ["token", "name", "password"],
  properties: {
    token: linkToken,
    name: memberName,
    password: newPassword,
    email: { ...emailAddress, description: "Only for the setup invitation (which names no address): the new member's address. Any other invitation's address is its own." },
  },
} as const;
export type InvitationAcceptBody = FromSchema<typeof InvitationAccept>;

export const MemberUpdate = {
  type: "object",
  additionalProperties: false,
  required: ["role"],
  properties: { role },
} as const;
export type MemberUpdateBody = FromSchema<typeof MemberUpdate>;

const memberProperties: Record<string, JsonSchema> = {
  id: { type: "string", readOnly: true, examples: ["mem_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
  email: { type: "string", readOnly: true },
  name: { type: "string", readOnly: true },
  role: ref("Role"),
  created_at: timestamp("When the member joined (RFC 3339, UTC)."),
};

export const schemas: Record<string, JsonSchema> = {
  AuditEntry: {
    type: "object",
    additionalProperties: false,
    required: ["id", "at", "actor", "action", "method", "path", "status", "mode", "ip"],
    properties: {
      id: { type: "string", examples: ["aud_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      at: timestamp("When (RFC 3339, UTC)."),
      actor: {
        type: "object",
        additionalProperties: false,
        required: ["type", "id"],
        description: "Who: a member (with their address), or the operator (the admin API).",
        properties: { type: { type: "string", enum: ["member", "api_key", "operator"] }, id: { type: "string" }, email: { type: "string" } },
      },
      action: { type: "string", description: "The operation (its operationId in this document), e.g. `createKey`, `createSession`." },
      method: { type: "string" },
      path: { type: "string", description: "The path with its ids, without the query; a parameter that is no id (an address) appears as its name, e.g. `/api/v1/suppressions/{email}`." },
      status: { type: "integer", description: "The answer's status: refusals are recorded too." },
      mode: { type: ["string", "null"], enum: ["live", "test", null], description: "The data acted on; null for the members' own doors (sign-in, invitations, resets) and the operator's changes." },
      ip: { type: "string", description: "The client's IP address as the gateway can trust it (the peer, or the X-Forwarded-For entry of TRUSTED_PROXY_HOPS); \"\" when unknown." },
    },
  },
  AuditEntryPage: page("AuditEntry", "A page of the audit log, newest first."),
  Member: { type: "object", additionalProperties: false, required: ["id", "email", "name", "role", "created_at"], properties: memberProperties },
  MemberPage: page("Member", "A page of members, oldest first."),
  MemberUpdate,
  Invitation: {
    type: "object",
    additionalProperties: false,
    required: ["id", "email", "role", "created_at", "expires_at"],
    properties: {
      id: { type: "string", readOnly: true, examples: ["inv_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      email: { type: ["string", "null"], description: "Whom it was mailed to; null for the setup invitation (its taker gives the address)." },
      role: ref("Role"),
      created_at: timestamp("When it was made."),
      expires_at: timestamp("When its link stops working (7 days after)."),
    },
  },
  InvitationPage: page("Invitation", "A page of open invitations (neither accepted nor expired), oldest first."),
  InvitationCreate,
  InvitationAccept,
  AccountOfMember: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "plan", "member"],
    properties: {
      id: { type: "string" },
      name: { type: "string" },
      plan: ref("Plan"),
      member: { ...ref("Member"), description: "The signed-in member, with their role." },
    },
  },
};

export const parameters: Record<string, ParameterObject> = {
  MemberId: pathParam("id", "The member's id (`mem_…`)."),
  InvitationId: pathParam("id", "The invitation's id (`inv_…`)."),
};

const storeErrors = ["Unauthorized", "InternalError", "Unavailable"] as const;

export const paths: Paths = {
  "/api/v1/audit-log": {
    get: {
      operationId: "listAuditLog",
      summary: "The account's audit log",
      description:
        "Admin or owner (or an API key). Newest first: every change a member made with their session (refused ones too, with their status), sign-ins (failed ones to a member's address too), sign-outs, invitations, accepts, password resets, role changes, removals, keys made and revoked, and the operator's changes to the account. API-key calls are not recorded.",
      tags: ["Members"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("AuditEntryPage"), "A page of entries."), ...errors(...storeErrors) },
    },
  },
  "/api/v1/account": {
    get: {
      operationId: "getMemberAccount",
      summary: "The account of the signed-in member, and their role",
      tags: ["Members"],
      security: SESSION_ONLY,
      responses: { "200": json(ref("AccountOfMember"), "The account."), ...errors(...storeErrors) },
    },
  },
  "/api/v1/members": {
    get: {
      operationId: "listMembers",
      summary: "List the account's members",
      tags: ["Members"],
      security: SESSION_ONLY,
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("MemberPage"), "A page of members."), ...errors(...storeErrors) },
    },
  },
  "/api/v1/members/{id}": {
    patch: {
      operationId: "updateMember",
      summary: "Change a member's role",
      description: "Admin or owner. Only an owner may make an owner or change an owner's role; the last owner's role cannot change (409 `last_owner`). The member's sessions see the new role at once.",
      tags: ["Members"],
      security: SESSION_ONLY,
      parameters: [param("MemberId")],
      requestBody: body("MemberUpdate"),
      responses: { "200": json(ref("Member"), "The member."), ...errors(...bodyErrors, "NotFound", "Conflict", ...storeErrors) },
    },
    delete: {
      operationId: "deleteMember",
      summary: "Remove a member",
      description: "Admin or owner (only an owner removes an owner; the last owner stays, 409 `last_owner`). Every session of the member ends at once.",
      tags: ["Members"],
      security: SESSION_ONLY,
      parameters: [param("MemberId")],
      responses: { "204": noContent("Removed."), ...errors("NotFound", "Conflict", ...storeErrors) },
    },
  },
  "/api/v1/invitations": {
    post: {
      operationId: "createInvitation",
      summary: "Invite someone to the account",
      description:
        "Admin or owner (only an owner invites an owner). Mails a one-time link (`/dashboard/accept#token=…`, 7 days) through the platform (the account's live mode, From EMAIL_FROM). 409 `member_exists` when the address is a member already.",
      tags: ["Members"],
      security: SESSION_ONLY,
      requestBody: body("InvitationCreate"),
      responses: { "201": json(ref("Invitation"), "The invitation (its link only in the mail)."), ...errors(...bodyErrors, "Conflict", ...serviceErrors) },
    },
    get: {
      operationId: "listInvitations",
      summary: "List open invitations",
      tags: ["Members"],
      security: SESSION_ONLY,
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("InvitationPage"), "A page of open invitations."), ...errors(...storeErrors) },
    },
  },
  "/api/v1/invitations/{id}": {
    delete: {
      operationId: "deleteInvitation",
      summary: "Withdraw an invitation",
      description: "Its link stops working.",
      tags: ["Members"],
      security: SESSION_ONLY,
      parameters: [param("InvitationId")],
      responses: { "204": noContent("Withdrawn."), ...errors("NotFound", ...storeErrors) },
    },
  },
  "/api/v1/invitations/accept": {
    post: {
      operationId: "acceptInvitation",
      summary: "Accept an invitation: become a member and sign in",
      description:
        "With the token of the mailed link, a name and a password: makes the member and signs them in (the session cookie). One use; an unknown, used or expired token is a 400 `invalid_token`. `email` only for the setup invitation.",
      tags: ["Members"],
      security: PUBLIC,
      requestBody: body("InvitationAccept"),
      responses: {
        "201": {
          ...json(ref("Session"), "The new member, signed in."),
          headers: { ...json(ref("Session"), "").headers, "Set-Cookie": { required: true, description: "The session cookie.", schema: { type: "string" } } },
        },
        ...errors(...bodyErrors, "Conflict", "TooManyRequests", "InternalError", "Unavailable"),
      },
    },
  },
};
