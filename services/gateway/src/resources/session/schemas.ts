import type { FromSchema } from "json-schema-to-ts";
import { emailAddress } from "../../openapi/common.js";
import { body, bodyErrors, errors, json, noContent, PUBLIC, ref, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, Paths } from "../../openapi/types.js";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../../members/passwords.js";
import { ROLES } from "../../members/roles.js";

// Dashboard sign-in and password resets: the members' own doors.

const SESSION_ONLY: Array<Record<string, string[]>> = [{ Session: [] }];

/** A new password: at least 10 characters, at most 256. */
export const newPassword = {
  type: "string",
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  description: `At least ${PASSWORD_MIN_LENGTH} characters, at most ${PASSWORD_MAX_LENGTH}; stored only as a scrypt hash.`,
} as const;

/** A one-time link's token: 32 random bytes, base64url. */
export const linkToken = {
  type: "string",
  minLength: 1,
  maxLength: 200,
  description: "The token after `#token=` in the link that was mailed.",
} as const;

export const SessionCreate = {
  type: "object",
  additionalProperties: false,
  required: ["email", "password"],
  properties: {
    email: emailAddress,
    password: { type: "string", minLength: 1, maxLength: PASSWORD_MAX_LENGTH },
  },
} as const;
export type SessionCreateBody = FromSchema<typeof SessionCreate>;

export const PasswordResetCreate = {
  type: "object",
  additionalProperties: false,
  required: ["email"],
  properties: { email: emailAddress },
} as const;
export type PasswordResetCreateBody = FromSchema<typeof PasswordResetCreate>;

export const PasswordResetComplete = {
  type: "object",
  additionalProperties: false,
  required: ["token", "password"],
  properties: { token: linkToken, password: newPassword },
} as const;
export type PasswordResetCompleteBody = FromSchema<typeof PasswordResetComplete>;

export const SET_COOKIE = {
  "Set-Cookie": {
    required: true,
    description: "The session cookie (`emailsvc_session`, or `__Host-emailsvc_session` over https): HttpOnly, SameSite=Strict, Path=/, Secure over https.",
    schema: { type: "string" },
  },
};

const CLEAR_COOKIE = {
  "Set-Cookie": { required: true, description: "Clears the session cookie (Max-Age=0).", schema: { type: "string" } },
};

export const schemas: Record<string, JsonSchema> = {
  Role: { type: "string", enum: ROLES, description: "viewer (reads), developer (also keys, webhooks, templates, sending domains, sends), admin (everything but owners), owner." },
  SessionMember: {
    type: "object",
    additionalProperties: false,
    required: ["id", "email", "name", "role"],
    properties: { id: { type: "string", examples: ["mem_01jd3x0k8m7y6t5r4q3p2n1m0k"] }, email: { type: "string" }, name: { type: "string" }, role: ref("Role") },
  },
  SessionAccount: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "plan"],
    properties: { id: { type: "string" }, name: { type: "string" }, plan: ref("Plan") },
  },
  Session: {
    type: "object",
    additionalProperties: false,
    required: ["member", "account", "csrf_token", "expires_at"],
    description: "The signed-in member, their account, and the token to send as `X-CSRF-Token` with every change.",
    properties: {
      member: ref("SessionMember"),
      account: ref("SessionAccount"),
      csrf_token: { type: "string", description: "Send as `X-CSRF-Token` on POST, PUT, PATCH and DELETE." },
      expires_at: timestamp("When the session ends unless used: 12 h after its last use, 7 days after sign-in at the latest."),
    },
  },
  SessionCreate,
  PasswordResetCreate,
  PasswordResetComplete,
};

export const paths: Paths = {
  "/api/v1/session": {
    post: {
      operationId: "createSession",
      summary: "Sign in to the dashboard",
      description:
        "Checks a member's email and password and sets the session cookie. A wrong password and an unknown address get the same 401 `invalid_credentials`. Failed sign-ins are limited per email address (`RATE_LIMIT_SIGN_IN_FAILURES`, default 10 per 15 min: past it that address is refused with 429, even with the right password, until it recovers) and per client address.",
      tags: ["Session"],
      security: PUBLIC,
      requestBody: body("SessionCreate"),
      responses: {
        "201": { ...json(ref("Session"), "Signed in."), headers: { ...json(ref("Session"), "").headers, ...SET_COOKIE } },
        ...errors(...bodyErrors, "Unauthorized", "TooManyRequests", "InternalError", "Unavailable"),
      },
    },
    get: {
      operationId: "getSession",
      summary: "The signed-in member and their account",
      tags: ["Session"],
      security: SESSION_ONLY,
      responses: {
        "200": json(ref("Session"), "The session."),
        ...errors("Unauthorized", "InternalError", "Unavailable"),
      },
    },
    delete: {
      operationId: "deleteSession",
      summary: "Sign out",
      tags: ["Session"],
      security: SESSION_ONLY,
      responses: {
        "204": { ...noContent("Signed out; the cookie is cleared."), headers: { ...noContent("").headers, ...CLEAR_COOKIE } },
        ...errors("Unauthorized", "InternalError", "Unavailable"),
      },
    },
  },
  "/api/v1/sessions": {
    delete: {
      operationId: "deleteAllSessions",
      summary: "Sign out everywhere",
      description: "Ends every session of the signed-in member, on every device.",
      tags: ["Session"],
      security: SESSION_ONLY,
      responses: {
        "204": { ...noContent("Every session ended; this one's cookie is cleared."), headers: { ...noContent("").headers, ...CLEAR_COOKIE } },
        ...errors("Unauthorized", "InternalError", "Unavailable"),
      },
    },
  },
  "/api/v1/password-resets": {
    post: {
      operationId: "createPasswordReset",
      summary: "Ask for a password reset link",
      description:
        "Always 202, whether or not the address is a member's: the answer tells nothing. A member gets a mail with a one-time link (`/dashboard/reset-password#token=…`, valid 1 hour). Limited per client address and per email address (429).",
      tags: ["Session"],
      security: PUBLIC,
      requestBody: body("PasswordResetCreate"),
      responses: {
        "202": noContent("Taken; a member gets the mail."),
        ...errors(...bodyErrors, "TooManyRequests", "InternalError", "Unavailable"),
      },
    },
  },
  "/api/v1/password-resets/complete": {
    post: {
      operationId: "completePasswordReset",
      summary: "Set a new password with a reset link's token",
      description: "Sets the password and ends every session of the member. An unknown, used or expired token is a 400 `invalid_token`.",
      tags: ["Session"],
      security: PUBLIC,
      requestBody: body("PasswordResetComplete"),
      responses: {
        "204": noContent("The password is set; sign in with it."),
        ...errors(...bodyErrors, "TooManyRequests", "InternalError", "Unavailable"),
      },
    },
  },
};
