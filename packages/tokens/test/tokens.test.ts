import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  checkLabelledMac,
  labelledMac,
  KeyConfigError,
  KeyRing,
  TokenError,
  generateKeyText,
  loadKeyRing,
  parseKeyRing,
  signToken,
  verifyToken,
  type TokenSubject,
} from "../src/index.js";

const secret = (byte: number) => Buffer.alloc(32, byte);
const ring = new KeyRing([{ id: "k2", secret: secret(2) }, { id: "k1", secret: secret(1) }]);
const subject: TokenSubject = {
  purpose: "unsubscribe",
  accountId: "acc_01jd3x0k8m7y6t5r4q3p2n1m0k",
  mode: "live",
  subscriberId: "sub_01jd3x0k8m7y6t5r4q3p2n1m0k",
  emailId: "eml_01jd3x0k8m7y6t5r4q3p2n1m0k",
};
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof TokenError) return err.reason;
    throw err;
  }
  return "accepted";
}

/** A token with any header and payload, signed with `key` (what an attacker who knows a key could make). */
function forge(header: object, payload: object, key: Buffer = secret(2)): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString("base64url")}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}`;
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
}

const goodPayload = () => ({
  iss: "emailsvc",
  aud: "unsubscribe",
  acc: subject.accountId,
  mode: "live",
  sub: subject.subscriberId,
  iat: NOW / 1000,
  exp: NOW / 1000 + 60,
});

describe("signToken / verifyToken", () => {
  it("round-trips the subject with the current key", () => {
    const token = signToken(ring, subject, { ttlSeconds: 3600, now: NOW });
    const verified = verifyToken(ring, token, { purpose: "unsubscribe", now: NOW + 1000 });
    expect(verified).toMatchObject({ ...subject, keyId: "k2", issuedAt: NOW / 1000, expiresAt: NOW / 1000 + 3600 });
  });

  it("carries ids only: the payload holds no address", () => {
    const token = signToken(ring, subject, { ttlSeconds: 60, now: NOW });
    const payload = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
    expect(Object.keys(payload).sort()).toEqual(["acc", "aud", "eml", "exp", "iat", "iss", "mode", "sub"]);
  });

  it("writes the claims as JSON.stringify of the claims object, signed with HMAC-SHA256 over header and claims, with or without each optional id", () => {
    const ids = { subscriberId: `sub_${"1".repeat(26)}`, emailId: `eml_${"2".repeat(26)}`, campaignId: `cmp_${"3".repeat(26)}` };
    for (const purpose of ["unsubscribe", "preferences", "portal_session", "confirm"] as const) {
      for (const [sub, eml, cmp] of [[true, true, true], [true, false, false], [false, true, false], [true, true, false], [false, true, true]]) {
        const given: TokenSubject = {
          purpose,
          accountId: subject.accountId,
          mode: purpose === "confirm" ? "test" : "live",
          ...(sub ? { subscriberId: ids.subscriberId } : {}),
          ...(eml ? { emailId: ids.emailId } : {}),
          ...(cmp ? { campaignId: ids.campaignId } : {}),
        };
        const token = signToken(ring, given, { ttlSeconds: 90, now: NOW + 999 });
        const [header, claims, signature] = token.split(".") as [string, string, string];
        const expected = {
          iss: "emailsvc",
          aud: purpose,
          acc: given.accountId,
          mode: given.mode,
          ...(sub ? { sub: ids.subscriberId } : {}),
          ...(eml ? { eml: ids.emailId } : {}),
          ...(cmp ? { cmp: ids.campaignId } : {}),
          iat: NOW / 1000,
          exp: NOW / 1000 + 90,
        };
        expect(Buffer.from(claims, "base64url").toString()).toBe(JSON.stringify(expected));
        expect(signature).toBe(createHmac("sha256", secret(2)).update(`${header}.${claims}`).digest("base64url"));
        expect(verifyToken(ring, token, { purpose, now: NOW })).toMatchObject(given);
      }
    }
  });

  it("keeps verifying tokens of an older key while it is listed, and stops once it is removed", () => {
    const oldRing = new KeyRing([{ id: "k1", secret: secret(1) }]);
    const token = signToken(oldRing, subject, { ttlSeconds: 60, now: NOW });
    expect(verifyToken(ring, token, { purpose: "unsubscribe", now: NOW }).keyId).toBe("k1");
    const rotated = new KeyRing([{ id: "k2", secret: secret(2) }]);
    expect(reasonOf(() => verifyToken(rotated, token, { purpose: "unsubscribe", now: NOW }))).toBe("unknown_key");
  });

  it("refuses an expired token, and one used for another purpose", () => {
    const token = signToken(ring, subject, { ttlSeconds: 60, now: NOW });
    expect(reasonOf(() => verifyToken(ring, token, { purpose: "unsubscribe", now: NOW + 60_000 }))).toBe("expired");
    expect(reasonOf(() => verifyToken(ring, token, { purpose: "preferences", now: NOW }))).toBe("wrong_purpose");
  });

  it("refuses alg none, other algorithms and a missing or unknown kid", () => {
    const payload = goodPayload();
    const unsigned = `${Buffer.from(JSON.stringify({ alg: "none", kid: "k2" })).toString("base64url")}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.`;
    expect(reasonOf(() => verifyToken(ring, unsigned, { purpose: "unsubscribe", now: NOW }))).toBe("malformed");
    expect(reasonOf(() => verifyToken(ring, `${unsigned}AAAA`, { purpose: "unsubscribe", now: NOW }))).toBe("unsupported_algorithm");
    expect(reasonOf(() => verifyToken(ring, forge({ alg: "HS512", kid: "k2" }, payload), { purpose: "unsubscribe", now: NOW }))).toBe(
      "unsupported_algorithm",
    );
    expect(reasonOf(() => verifyToken(ring, forge({ alg: "hs256", kid: "k2" }, payload), { purpose: "unsubscribe", now: NOW }))).toBe(
      "unsupported_algorithm",
    );
    expect(reasonOf(() => verifyToken(ring, forge({ alg: "HS256" }, payload), { purpose: "unsubscribe", now: NOW }))).toBe("unknown_key");
    expect(reasonOf(() => verifyToken(ring, forge({ alg: "HS256", kid: "k9" }, payload), { purpose: "unsubscribe", now: NOW }))).toBe(
      "unknown_key",
    );
  });

  it("refuses a token signed with another key under a known kid, and any tampering", () => {
    expect(reasonOf(() => verifyToken(ring, forge({ alg: "HS256", kid: "k2" }, goodPayload(), secret(9)), { purpose: "unsubscribe", now: NOW }))).toBe(
      "bad_signature",
    );
    const token = signToken(ring, subject, { ttlSeconds: 60, now: NOW });
    const [h, , s] = token.split(".");
    const otherSubscriber = Buffer.from(JSON.stringify({ ...goodPayload(), sub: "sub_01jd3x0k8m7y6t5r4q3p2n1m0z" })).toString("base64url");
    expect(reasonOf(() => verifyToken(ring, `${h}.${otherSubscriber}.${s}`, { purpose: "unsubscribe", now: NOW }))).toBe("bad_signature");
    // A changed last character may decode to the same bytes (unused bits): not canonical, refused.
    const last = s!.slice(-1) === "A" ? "B" : "A";
    expect(reasonOf(() => verifyToken(ring, `${h}.${token.split(".")[1]}.${s!.slice(0, -1)}${last}`, { purpose: "unsubscribe", now: NOW }))).not.toBe(
      "accepted",
    );
  });

  it("checks the claims even of a validly signed token", () => {
    const cases: Array<[object, string]> = [
      [{ ...goodPayload(), iss: "someone" }, "invalid_claims"],
      [{ ...goodPayload(), acc: "acc_x" }, "invalid_claims"],
      [{ ...goodPayload(), mode: "prod" }, "invalid_claims"],
      [{ ...goodPayload(), sub: "not-a-subscriber" }, "invalid_claims"],
      [{ ...goodPayload(), sub: undefined }, "invalid_claims"],
      [{ ...goodPayload(), iat: NOW / 1000 + 3600 }, "invalid_claims"],
      [{ ...goodPayload(), exp: "tomorrow" }, "invalid_claims"],
      [{ ...goodPayload(), exp: NOW / 1000 + 0.5 }, "invalid_claims"],
    ];
    for (const [payload, reason] of cases) {
      expect([payload, reasonOf(() => verifyToken(ring, forge({ alg: "HS256", kid: "k2" }, payload), { purpose: "unsubscribe", now: NOW }))]).toEqual([
        payload,
        reason,
      ]);
    }
  });

  it("refuses malformed input without throwing anything but TokenError", () => {
    for (const bad of ["", "a.b", "a.b.c.d", "é.b.c", "a+b.c.d", "x".repeat(3000), "..", "e30.e30.", "W10.e30.AAAA", "bnVsbA.e30.AAAA"]) {
      expect([bad, reasonOf(() => verifyToken(ring, bad, { purpose: "unsubscribe", now: NOW }))]).toEqual([bad, "malformed"]);
      expect(() => verifyToken(ring, bad, { purpose: "unsubscribe", now: NOW })).toThrow(TokenError);
    }
    expect(reasonOf(() => verifyToken(ring, forge({ alg: "HS256", kid: "k2", crit: ["exp"] }, goodPayload()), { purpose: "unsubscribe", now: NOW }))).toBe(
      "malformed",
    );
  });
});

describe("key rings", () => {
  it("parses kid:secret lists, base64 or base64url, and names the variable in errors without the secret", () => {
    const text = `${generateKeyText("new")},old:${Buffer.alloc(32, 7).toString("base64")}`;
    const parsed = parseKeyRing(text);
    expect(parsed.current.id).toBe("new");
    expect(parsed.find("old")?.secret.equals(Buffer.alloc(32, 7))).toBe(true);
    const short = `k:${Buffer.alloc(16, 1).toString("base64")}`;
    expect(() => parseKeyRing(short)).toThrow(/TOKEN_SIGNING_KEYS: key "k" is 16 bytes/);
    expect(() => parseKeyRing("")).toThrow(KeyConfigError);
    expect(() => parseKeyRing("nocolon")).toThrow(/<id>:<base64 secret>/);
    expect(() => parseKeyRing(`a:${"A".repeat(43)},a:${"B".repeat(43)}`)).toThrow(/listed twice/);
    try {
      parseKeyRing("bad id:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0");
    } catch (err) {
      expect((err as Error).message).not.toContain("c2VjcmV0");
    }
  });

  it("requires the variable outside the embedded mode", () => {
    expect(() => loadKeyRing({ value: undefined })).toThrow(/TOKEN_SIGNING_KEYS is required/);
    expect(loadKeyRing({ value: generateKeyText("x") }).current.id).toBe("x");
  });

  it("keeps one development key under the data directory, private, across loads", () => {
    const dir = mkdtempSync(join(tmpdir(), "tokens-"));
    try {
      const first = loadKeyRing({ value: "", developmentDir: dir });
      const second = loadKeyRing({ value: undefined, developmentDir: dir });
      expect(second.current.secret.equals(first.current.secret)).toBe(true);
      const file = join(dir, "secrets", "token-signing-keys");
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, "utf8")).toMatch(/^dev:[A-Za-z0-9_-]{43}\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads another variable the same way, with its own development file and messages", () => {
    expect(() => loadKeyRing({ value: undefined, variable: "SUPPRESSION_KEYS" })).toThrow(/^SUPPRESSION_KEYS is required/);
    expect(() => loadKeyRing({ value: "nocolon", variable: "SUPPRESSION_KEYS" })).toThrow(/^SUPPRESSION_KEYS:/);
    const dir = mkdtempSync(join(tmpdir(), "tokens-"));
    try {
      const signing = loadKeyRing({ value: undefined, developmentDir: dir });
      const suppression = loadKeyRing({ value: undefined, developmentDir: dir, variable: "SUPPRESSION_KEYS" });
      expect(suppression.current.secret.equals(signing.current.secret)).toBe(false);
      expect(statSync(join(dir, "secrets", "suppression-keys")).mode & 0o777).toBe(0o600);
      expect(loadKeyRing({ value: "", developmentDir: dir, variable: "SUPPRESSION_KEYS" }).current.secret.equals(suppression.current.secret)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("labelledMac / checkLabelledMac", () => {
  const old = parseKeyRing(`old:${Buffer.alloc(32, 1).toString("base64")}`);
  const rotated = parseKeyRing(`new:${Buffer.alloc(32, 2).toString("base64")},old:${Buffer.alloc(32, 1).toString("base64")}`);

  it("checks under the key that made it while the ring holds it, for its label and data only", () => {
    const mac = labelledMac(old, "signup_challenge", "abc");
    expect(mac.startsWith("old.")).toBe(true);
    expect(checkLabelledMac(old, "signup_challenge", "abc", mac)).toBe(true);
    // Rotated: the old key still checks what it made; new ones are made with the new key.
    expect(checkLabelledMac(rotated, "signup_challenge", "abc", mac)).toBe(true);
    expect(labelledMac(rotated, "signup_challenge", "abc").startsWith("new.")).toBe(true);
    expect(checkLabelledMac(old, "csrf", "abc", mac)).toBe(false);
    expect(checkLabelledMac(old, "signup_challenge", "abd", mac)).toBe(false);
    expect(checkLabelledMac(parseKeyRing(`new:${Buffer.alloc(32, 2).toString("base64")}`), "signup_challenge", "abc", mac)).toBe(false);
    for (const bad of ["", ".", "old.", "nokey", `old.${"A".repeat(43)}`]) expect(checkLabelledMac(old, "signup_challenge", "abc", bad)).toBe(false);
  });
});
