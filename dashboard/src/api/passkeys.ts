// Passkeys in the browser: the API's WebAuthn options (JSON, binary fields
// base64url) turned into what navigator.credentials takes, and its
// credential back into JSON for the API, which verifies it
// (@simplewebauthn/server). Only conversions here: no CBOR is read.

import { api, ApiProblem, ok } from "./client";
import type { components } from "./schema";
import type { SessionInfo } from "../session";
import { t } from "../i18n";

export type PasskeyItem = components["schemas"]["Passkey"];

export function toBase64url(bytes: ArrayBuffer): string {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(value: string): ArrayBuffer {
  const text = atob(value.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((value.length + 3) % 4));
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes.buffer;
}

interface Descriptor {
  id: string;
  type: "public-key";
  transports?: AuthenticatorTransport[];
}

const descriptors = (list: Descriptor[] | undefined): PublicKeyCredentialDescriptor[] | undefined => list?.map((d) => ({ ...d, id: fromBase64url(d.id) }));

/** Whether this browser can make and use passkeys at all. */
export function passkeysSupported(): boolean {
  return typeof window.PublicKeyCredential === "function" && !!navigator.credentials;
}

/** The browser's refusal (the member cancelled, no authenticator) as a problem the forms show. */
function browserProblem(err: unknown): ApiProblem {
  const cancelled = err instanceof DOMException && err.name === "NotAllowedError";
  return new ApiProblem(400, "passkey_browser", cancelled ? t("passkeys.cancelled") : t("passkeys.browserFailed"));
}

/** Registers a passkey of this device under `name` for the signed-in member. */
export async function registerPasskey(name: string): Promise<PasskeyItem> {
  const { challenge_id, options } = await ok(api.POST("/api/v1/passkeys/registration-options", {}));
  const json = options as unknown as PublicKeyCredentialCreationOptions & { challenge: string; user: { id: string; name: string; displayName: string }; excludeCredentials?: Descriptor[] };
  let credential: PublicKeyCredential;
  try {
    credential = (await navigator.credentials.create({
      publicKey: { ...json, challenge: fromBase64url(json.challenge), user: { ...json.user, id: fromBase64url(json.user.id) }, excludeCredentials: descriptors(json.excludeCredentials) ?? [] },
    })) as PublicKeyCredential;
  } catch (err) {
    throw browserProblem(err);
  }
  const response = credential.response as AuthenticatorAttestationResponse;
  const body = asJson(credential, {
    attestationObject: toBase64url(response.attestationObject),
    transports: typeof response.getTransports === "function" ? response.getTransports() : [],
  });
  return ok(api.POST("/api/v1/passkeys", { body: { challenge_id, name, credential: body } }));
}

/** Signs in with a passkey the authenticator offers (no address asked): the session, as a password sign-in gives. */
export async function signInWithPasskey(): Promise<SessionInfo> {
  const { challenge_id, options } = await ok(api.POST("/api/v1/session/passkey-options", {}));
  const json = options as unknown as PublicKeyCredentialRequestOptions & { challenge: string; allowCredentials?: Descriptor[] };
  let credential: PublicKeyCredential;
  try {
    credential = (await navigator.credentials.get({
      publicKey: { ...json, challenge: fromBase64url(json.challenge), allowCredentials: descriptors(json.allowCredentials) ?? [] },
    })) as PublicKeyCredential;
  } catch (err) {
    throw browserProblem(err);
  }
  const response = credential.response as AuthenticatorAssertionResponse;
  const body = asJson(credential, {
    authenticatorData: toBase64url(response.authenticatorData),
    signature: toBase64url(response.signature),
    ...(response.userHandle ? { userHandle: toBase64url(response.userHandle) } : {}),
  });
  return ok(api.POST("/api/v1/session/passkey", { body: { challenge_id, credential: body } }));
}

export const listPasskeys = (): Promise<{ items: PasskeyItem[] }> => ok(api.GET("/api/v1/passkeys"));
export const removePasskey = (id: string): Promise<unknown> => ok(api.DELETE("/api/v1/passkeys/{id}", { params: { path: { id } } }));

/** A credential as the server reads it (WebAuthn's JSON form): the parts both ceremonies share, and `response`'s own. */
function asJson<R extends Record<string, unknown>>(credential: PublicKeyCredential, response: R) {
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: "public-key" as const,
    response: { clientDataJSON: toBase64url(credential.response.clientDataJSON), ...response },
    clientExtensionResults: credential.getClientExtensionResults(),
  };
}
