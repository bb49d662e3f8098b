import type * as WebAuthn from "@simplewebauthn/server";
import type { AuthenticationResponseJSON, AuthenticatorTransport, RegistrationResponseJSON } from "@simplewebauthn/server";
import { sha256Hex } from "../../accounts/secrets.js";
import { Problem } from "../../http/problem.js";
import { rateLimited } from "../../http/rate-limit.js";
import type { GatewayRouterContext } from "../../http/state.js";
import { PasskeyExistsError } from "../../members/passkeys.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import type { ResourceContext } from "../resource.js";
import { signIn } from "../session/routes.js";
import { passkeyJson } from "./mapping.js";
import type { PasskeyCreateBody, PasskeySignInBody } from "./schemas.js";

// Passkeys with @simplewebauthn/server: it makes the options and verifies
// the authenticator's answers (CBOR, COSE keys, signatures, origin, RP ID,
// counter); this file keeps the challenges (passkeys.ts: one use, 5 minutes,
// bound to a session or a pending sign-in) and the credentials.

/**
 * @simplewebauthn/server, loaded at the first passkey ceremony: with its
 * ASN.1 and X.509 modules it is about 900 modules and 9 MB of heap, which a
 * gateway whose members never use passkeys need not hold.
 */
function webAuthn(): typeof WebAuthn {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (above)
  return require("@simplewebauthn/server") as typeof WebAuthn;
}

const notAccepted = (headers: Record<string, string> = {}) => new Problem("passkey_not_accepted", "The passkey was not accepted. Sign in with your password, or try again.", { headers });
const badRegistration = () => new Problem("invalid_passkey_registration", "The passkey could not be registered: the answer does not verify, or its options expired or were used. Try again.");

/** The relying party: PUBLIC_API_URL's host name and origin (the dashboard is served there). */
export function relyingParty(publicUrl: string): { id: string; origin: string } {
  const url = new URL(publicUrl);
  return { id: url.hostname, origin: url.origin };
}

/** Whether a challenge (as the answer's clientDataJSON carries it) is the one whose hash was stored. */
const matches = (hash: string) => (challenge: string) => sha256Hex(challenge) === hash;

export function passkeysRoutes(kit: RouteKit, context: ResourceContext): void {
  const { passkeys, members, authGuard } = context;
  const rp = relyingParty(context.publicUrl);
  const live = (ctx: GatewayRouterContext) => ctx.state.session!;

  defineRoute(kit, "post", "/api/v1/passkeys/registration-options", "createPasskeyRegistrationOptions", async (ctx) => {
    const { session, member } = live(ctx);
    const { id, challenge } = await passkeys.createChallenge("registration", session.id);
    const existing = await passkeys.listOf(member.id);
    const options = await webAuthn().generateRegistrationOptions({
      rpName: "emailsvc dashboard",
      rpID: rp.id,
      userID: new TextEncoder().encode(member.id),
      userName: member.email,
      userDisplayName: member.name,
      challenge: Buffer.from(challenge, "base64url"),
      attestationType: "none",
      excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports as AuthenticatorTransport[] })),
      authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
    });
    ctx.set("Cache-Control", "no-store");
    ctx.body = { challenge_id: id, options };
  });

  defineRoute(kit, "post", "/api/v1/passkeys", "createPasskey", async (ctx) => {
    const { session, member } = live(ctx);
    const body = ctx.state.body as PasskeyCreateBody;
    const hash = await passkeys.takeChallenge(body.challenge_id, "registration", session.id);
    if (!hash) throw badRegistration();
    let verified;
    try {
      verified = await webAuthn().verifyRegistrationResponse({
        response: body.credential as unknown as RegistrationResponseJSON,
        expectedChallenge: matches(hash),
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        requireUserVerification: false,
      });
    } catch {
      throw badRegistration();
    }
    if (!verified.verified || !verified.registrationInfo) throw badRegistration();
    const { credential } = verified.registrationInfo;
    try {
      const passkey = await passkeys.create({
        memberId: member.id,
        accountId: member.accountId,
        credentialId: credential.id,
        publicKey: credential.publicKey,
        counter: credential.counter,
        transports: credential.transports ?? [],
        name: body.name,
      });
      ctx.status = 201;
      ctx.body = passkeyJson(passkey);
    } catch (err) {
      if (err instanceof PasskeyExistsError) throw new Problem("passkey_exists", "This passkey is registered already.");
      throw err;
    }
  });

  defineRoute(kit, "get", "/api/v1/passkeys", "listPasskeys", async (ctx) => {
    ctx.body = { items: (await passkeys.listOf(live(ctx).member.id)).map(passkeyJson) };
  });

  defineRoute(kit, "delete", "/api/v1/passkeys/:id", "deletePasskey", async (ctx) => {
    const removed = await passkeys.remove(live(ctx).member.id, ctx.params.id ?? "");
    if (!removed) throw new Problem("not_found", "You have no such passkey.");
    ctx.status = 204;
  });

  defineRoute(kit, "post", "/api/v1/session/passkey-options", "createPasskeySignInOptions", async (ctx) => {
    const locked = authGuard.locked(ctx);
    if (locked) throw rateLimited(locked);
    const { id, challenge } = await passkeys.createChallenge("authentication", null);
    const options = await webAuthn().generateAuthenticationOptions({ rpID: rp.id, challenge: Buffer.from(challenge, "base64url"), userVerification: "preferred", allowCredentials: [] });
    ctx.set("Cache-Control", "no-store");
    ctx.body = { challenge_id: id, options };
  });

  defineRoute(kit, "post", "/api/v1/session/passkey", "createSessionWithPasskey", async (ctx) => {
    const locked = authGuard.locked(ctx);
    if (locked) throw rateLimited(locked);
    const body = ctx.state.body as PasskeySignInBody;
    const refuse = async () => notAccepted(await authGuard.failed(ctx));
    const hash = await passkeys.takeChallenge(body.challenge_id, "authentication", null);
    if (!hash) throw await refuse();
    const passkey = await passkeys.byCredentialId(body.credential.id);
    if (!passkey) throw await refuse();
    // A passkey whose member is gone (removed between the two deletes) signs nobody in.
    const member = await members.getMember(passkey.accountId, passkey.memberId);
    if (!member) throw await refuse();
    // From here a refusal is an attempt on this member's passkey: their account's audit log records it, as a wrong password.
    ctx.state.auditActor = { type: "member", id: member.id, email: member.email, accountId: member.accountId };
    let newCounter: number;
    try {
      const verified = await webAuthn().verifyAuthenticationResponse({
        response: body.credential as unknown as AuthenticationResponseJSON,
        expectedChallenge: matches(hash),
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        // The library refuses a counter that did not grow when either is non-zero (a cloned authenticator).
        credential: { id: passkey.credentialId, publicKey: passkey.publicKey as Uint8Array<ArrayBuffer>, counter: passkey.counter, transports: passkey.transports as AuthenticatorTransport[] },
        requireUserVerification: false,
      });
      if (!verified.verified) throw await refuse();
      newCounter = verified.authenticationInfo.newCounter;
    } catch (err) {
      if (err instanceof Problem) throw err;
      throw await refuse();
    }
    if (!(await passkeys.recordUse(passkey.id, passkey.counter, newCounter))) throw await refuse();
    ctx.status = 201;
    ctx.body = await signIn(context, ctx, member);
  });
}
