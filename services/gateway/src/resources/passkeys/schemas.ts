import type { FromSchema } from "json-schema-to-ts";
import { body, bodyErrors, errors, json, lineText, noContent, nullableTimestamp, param, pathParam, PUBLIC, ref, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";
import { SET_COOKIE } from "../session/schemas.js";

// Passkeys (WebAuthn): a signed-in member registers them, anyone signs in
// with one. The options and the authenticator's answers are the WebAuthn
// JSON forms (PublicKeyCredentialCreationOptionsJSON, RegistrationResponseJSON
// and their sign-in twins), passed to and from navigator.credentials as they are.

const SESSION_ONLY: Array<Record<string, string[]>> = [{ Session: [] }];

const challengeId = { type: "string", minLength: 1, maxLength: 64, description: "The `challenge_id` of the options this answer signs." } as const;
const credentialJson = {
  type: "object",
  required: ["id", "rawId", "type", "response"],
  additionalProperties: true,
  description: "The credential navigator.credentials returned, in its WebAuthn JSON form (binary fields base64url).",
  properties: {
    id: { type: "string", minLength: 1, maxLength: 1400 },
    rawId: { type: "string", minLength: 1, maxLength: 1400 },
    type: { type: "string", const: "public-key" },
    response: { type: "object", additionalProperties: true },
  },
} as const;

export const PasskeyCreate = {
  type: "object",
  additionalProperties: false,
  required: ["challenge_id", "name", "credential"],
  properties: {
    challenge_id: challengeId,
    name: lineText(100, "must be one line of visible text"),
    credential: credentialJson,
  },
} as const;
export type PasskeyCreateBody = FromSchema<typeof PasskeyCreate>;

export const PasskeySignIn = {
  type: "object",
  additionalProperties: false,
  required: ["challenge_id", "credential"],
  properties: { challenge_id: challengeId, credential: credentialJson },
} as const;
export type PasskeySignInBody = FromSchema<typeof PasskeySignIn>;

const options = (what: string) => ({
  type: "object",
  additionalProperties: false,
  required: ["challenge_id", "options"],
  description: `${what} Valid 5 minutes, for one answer.`,
  properties: {
    challenge_id: { type: "string", description: "Send back with the authenticator's answer." },
    options: { type: "object", additionalProperties: true, description: "The WebAuthn options in their JSON form (binary fields base64url), for navigator.credentials." },
  },
});

export const schemas: Record<string, JsonSchema> = {
  Passkey: {
    type: "object",
    additionalProperties: false,
    required: ["id", "name", "created_at", "last_used_at"],
    properties: {
      id: { type: "string", examples: ["pk_01jd3x0k8m7y6t5r4q3p2n1m0k"] },
      name: { type: "string" },
      created_at: timestamp("When it was registered."),
      last_used_at: nullableTimestamp("When it last signed in; null if never."),
    },
  },
  PasskeyList: {
    type: "object",
    additionalProperties: false,
    required: ["items"],
    properties: { items: { type: "array", items: ref("Passkey") } },
  },
  PasskeyRegistrationOptions: options("The options of a passkey's registration (navigator.credentials.create)."),
  PasskeySignInOptions: options("The options of a passkey sign-in (navigator.credentials.get), naming no credential: the authenticator offers the passkeys it holds for this site."),
  PasskeyCreate,
  PasskeySignIn,
};

export const parameters: Record<string, ParameterObject> = {
  PasskeyId: pathParam("id", "The passkey's id (`pk_…`)."),
};

const storeErrors = ["Unauthorized", "InternalError", "Unavailable"] as const;
const ORIGIN_NOTE = "Passkeys are bound to the dashboard's exact origin: the relying party id is PUBLIC_API_URL's host name and the expected origin PUBLIC_API_URL's origin.";

export const paths: Paths = {
  "/api/v1/passkeys/registration-options": {
    post: {
      operationId: "createPasskeyRegistrationOptions",
      summary: "Start registering a passkey",
      description: `Options for navigator.credentials.create: a discoverable credential for the signed-in member, with user verification preferred, excluding the passkeys they have. The challenge belongs to this session. ${ORIGIN_NOTE}`,
      tags: ["Passkeys"],
      security: SESSION_ONLY,
      responses: { "200": json(ref("PasskeyRegistrationOptions"), "The options."), ...errors(...storeErrors) },
    },
  },
  "/api/v1/passkeys": {
    post: {
      operationId: "createPasskey",
      summary: "Register a passkey",
      description:
        "Verifies the authenticator's answer to the options of `challenge_id` (this session's, unused, at most 5 minutes old; origin and relying party id checked) and stores the passkey under `name`. A bad answer is a 400 `invalid_passkey_registration`; a credential registered already, 409 `passkey_exists`.",
      tags: ["Passkeys"],
      security: SESSION_ONLY,
      requestBody: body("PasskeyCreate"),
      responses: { "201": json(ref("Passkey"), "Registered."), ...errors(...bodyErrors, "Conflict", ...storeErrors) },
    },
    get: {
      operationId: "listPasskeys",
      summary: "The signed-in member's passkeys",
      tags: ["Passkeys"],
      security: SESSION_ONLY,
      responses: { "200": json(ref("PasskeyList"), "Oldest first (at most 100)."), ...errors(...storeErrors) },
    },
  },
  "/api/v1/passkeys/{id}": {
    delete: {
      operationId: "deletePasskey",
      summary: "Remove a passkey",
      description: "Only the member's own. It signs nobody in from then on.",
      tags: ["Passkeys"],
      security: SESSION_ONLY,
      parameters: [param("PasskeyId")],
      responses: { "204": noContent("Removed."), ...errors("NotFound", ...storeErrors) },
    },
  },
  "/api/v1/session/passkey-options": {
    post: {
      operationId: "createPasskeySignInOptions",
      summary: "Start a passkey sign-in",
      description: `Options for navigator.credentials.get, naming no member (discoverable credentials: no email address needed). ${ORIGIN_NOTE}`,
      tags: ["Session"],
      security: PUBLIC,
      responses: { "200": json(ref("PasskeySignInOptions"), "The options."), ...errors("TooManyRequests", "InternalError", "Unavailable") },
    },
  },
  "/api/v1/session/passkey": {
    post: {
      operationId: "createSessionWithPasskey",
      summary: "Sign in with a passkey",
      description:
        "Verifies the authenticator's answer to the options of `challenge_id` (unused, at most 5 minutes old; origin, relying party id, signature and counter checked) and sets the session cookie, as a password sign-in does. Any refusal (an unknown or removed passkey, a removed member, a used or expired challenge, another origin) is one 401 `passkey_not_accepted`, counted against the client address like a wrong password.",
      tags: ["Session"],
      security: PUBLIC,
      requestBody: body("PasskeySignIn"),
      responses: {
        "201": { ...json(ref("Session"), "Signed in (as `createSession`'s answer)."), headers: { ...json(ref("Session"), "").headers, ...SET_COOKIE } },
        ...errors(...bodyErrors, "Unauthorized", "TooManyRequests", "InternalError", "Unavailable"),
      },
    },
  },
};
