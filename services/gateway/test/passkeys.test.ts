import { openStore } from "@emailsvc/storage";
import { loadRateLimitConfig } from "../src/ratelimit/config";
import { PASSKEY_CHALLENGE_TTL_MS, PasskeyExistsError, PasskeyStore } from "../src/members/passkeys";
import { MemberStore } from "../src/members/store";
import { relyingParty } from "../src/resources/passkeys/routes";
import { startHarness } from "./support/harness";

// The passkeys' store: challenges (one use, 5 minutes, bound to their
// session or sign-in) and credentials (unique, removed with their member).
// The ceremonies themselves are tested in the browser with a virtual
// authenticator (embedded/test/dashboard-passkeys.test.ts).

// Both stores: the embedded one, and MongoDB/FerretDB (MONGO_URL, which Jest's global setup provides).
function mongoUrl(): string {
  if (!process.env.MONGO_URL) throw new Error("MONGO_URL is not set: Jest's global setup starts FerretDB");
  return process.env.MONGO_URL;
}

const STORES = [
  ["embedded", () => openStore({ dbName: "gateway" })],
  ["mongodb", () => openStore({ mongoUrl: mongoUrl(), dbName: `gateway_passkeys_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}` })],
] as const;

describe.each(STORES)("passkey challenges (%s store)", (_name, open) => {
  it("are taken once, only for their purpose and session, and not after 5 minutes", async () => {
    const store = await open();
    let now = Date.parse("2026-11-01T08:00:00Z");
    const passkeys = new PasskeyStore(store, () => new Date(now));
    await passkeys.ensureIndexes();
    try {
      const reg = await passkeys.createChallenge("registration", "ses_a");
      expect(reg.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // Another session, another purpose, no session: refused, and the challenge stays open.
      expect(await passkeys.takeChallenge(reg.id, "registration", "ses_b")).toBeUndefined();
      expect(await passkeys.takeChallenge(reg.id, "authentication", null)).toBeUndefined();
      expect(await passkeys.takeChallenge(reg.id, "registration", null)).toBeUndefined();
      const hash = await passkeys.takeChallenge(reg.id, "registration", "ses_a");
      expect(hash).toMatch(/^[0-9a-f]{64}$/);
      expect(hash).not.toContain(reg.challenge);
      // Used once.
      expect(await passkeys.takeChallenge(reg.id, "registration", "ses_a")).toBeUndefined();

      const auth = await passkeys.createChallenge("authentication", null);
      now += PASSKEY_CHALLENGE_TTL_MS - 1000;
      const late = await passkeys.createChallenge("authentication", null);
      now += 2000;
      expect(await passkeys.takeChallenge(auth.id, "authentication", null)).toBeUndefined();
      expect(await passkeys.takeChallenge(late.id, "authentication", null)).toBeDefined();
      expect(await passkeys.takeChallenge("pkc_not-an-id", "authentication", null)).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

describe.each(STORES)("passkeys in the store (%s)", (_name, open) => {
  it("are unique by credential, record a use only at the counter verified, and go with their member", async () => {
    const store = await open();
    const passkeys = new PasskeyStore(store);
    const members = new MemberStore(store);
    await Promise.all([passkeys.ensureIndexes(), members.ensureIndexes()]);
    try {
      const member = await members.createMember({ accountId: "acc_01jd3x0k8m7y6t5r4q3p2n1m0k", email: "keys@example.com", name: "K", role: "viewer", passwordHash: "x" });
      const input = { memberId: member.id, accountId: member.accountId, credentialId: "Y3JlZC0x", publicKey: new Uint8Array([1, 2, 3]), counter: 5, transports: ["internal"], name: "Laptop" };
      const passkey = await passkeys.create(input);
      expect(passkey.lastUsedAt).toBeNull();
      await expect(passkeys.create({ ...input, name: "Again" })).rejects.toBeInstanceOf(PasskeyExistsError);
      expect((await passkeys.byCredentialId("Y3JlZC0x"))?.publicKey).toEqual(new Uint8Array([1, 2, 3]));
      // Two sign-ins verified against counter 5: the first wins, the second finds it moved.
      expect(await passkeys.recordUse(passkey.id, 5, 6)).toBe(true);
      expect(await passkeys.recordUse(passkey.id, 5, 6)).toBe(false);
      expect((await passkeys.listOf(member.id))[0]).toMatchObject({ counter: 6, lastUsedAt: expect.any(String) });
      // Only the member's own.
      expect(await passkeys.remove("mem_01jd3x0k8m7y6t5r4q3p2n1m0k", passkey.id)).toBe(false);

      await members.removeMember(member.accountId, member.id);
      expect(await passkeys.byCredentialId("Y3JlZC0x")).toBeUndefined();
    } finally {
      await store.close();
    }
  });

});

describe("passkey sign-in", () => {
  it("belongs to PUBLIC_API_URL's host and origin", () => {
    expect(relyingParty("http://localhost:8080")).toEqual({ id: "localhost", origin: "http://localhost:8080" });
    expect(relyingParty("https://mail.example.com/")).toEqual({ id: "mail.example.com", origin: "https://mail.example.com" });
  });

  it("counts its failures against the client address, like wrong passwords, and then refuses even the options", async () => {
    const h = await startHarness({ rateLimit: loadRateLimitConfig({ RATE_LIMIT_AUTH_FAILURES: "3/60s" }) });
    try {
      const options = await h.request("POST", "/api/v1/session/passkey-options", { key: null });
      expect(options.status).toBe(200);
      expect(options.body.options).toMatchObject({ rpId: "localhost", allowCredentials: [], challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
      const credential = { id: "dW5rbm93bg", rawId: "dW5rbm93bg", type: "public-key", response: { clientDataJSON: "e30", authenticatorData: "AA", signature: "AA" } };
      for (let i = 0; i < 3; i++) {
        const res = await h.request("POST", "/api/v1/session/passkey", { key: null, body: { challenge_id: options.body.challenge_id, credential } });
        expect({ i, status: res.status, code: res.body.code }).toEqual({ i, status: 401, code: "passkey_not_accepted" });
      }
      const locked = await h.request("POST", "/api/v1/session/passkey", { key: null, body: { challenge_id: options.body.challenge_id, credential } });
      expect(locked.status).toBe(429);
      expect(locked.headers.get("retry-after")).toMatch(/^\d+$/);
      expect((await h.request("POST", "/api/v1/session/passkey-options", { key: null })).status).toBe(429);
    } finally {
      await h.close();
    }
  });
});
