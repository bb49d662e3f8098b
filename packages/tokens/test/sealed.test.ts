import { KeyRing, SealedValueError, openSealed, seal, sealedWithOldKey } from "../src/index.js";

const secret = (byte: number) => Buffer.alloc(32, byte);
const oldRing = new KeyRing([{ id: "k1", secret: secret(1) }]);
const rotated = new KeyRing([{ id: "k2", secret: secret(2) }, { id: "k1", secret: secret(1) }]);

describe("sealed values", () => {
  it("opens what it sealed, and never holds the plaintext in the sealed form", () => {
    const sealed = seal(oldRing, "dkim-private-key", "-----BEGIN PRIVATE KEY-----\nabc");
    expect(sealed).toMatch(/^s1\.k1\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain("PRIVATE");
    expect(openSealed(oldRing, "dkim-private-key", sealed).toString()).toBe("-----BEGIN PRIVATE KEY-----\nabc");
    // A new seal of the same value differs (a fresh IV each time).
    expect(seal(oldRing, "dkim-private-key", "x")).not.toBe(seal(oldRing, "dkim-private-key", "x"));
  });

  it("opens a value sealed with an older key after a rotation, and says which values are due to be sealed again", () => {
    const sealed = seal(oldRing, "webhook-secret", "whsec_1");
    expect(openSealed(rotated, "webhook-secret", sealed).toString()).toBe("whsec_1");
    expect(sealedWithOldKey(rotated, sealed)).toBe(true);
    expect(sealedWithOldKey(rotated, seal(rotated, "webhook-secret", "whsec_1"))).toBe(false);
  });

  it("refuses a value sealed for another purpose, altered, or under a key the ring no longer holds", () => {
    const sealed = seal(rotated, "webhook-secret", "whsec_1");
    expect(() => openSealed(rotated, "dkim-private-key", sealed)).toThrow(SealedValueError);
    const [v, kid, iv, body] = sealed.split(".") as [string, string, string, string];
    const flipped = Buffer.from(body, "base64url");
    flipped[0] = flipped[0]! ^ 1;
    expect(() => openSealed(rotated, "webhook-secret", [v, kid, iv, flipped.toString("base64url")].join("."))).toThrow(/altered/);
    expect(() => openSealed(oldRing, "webhook-secret", sealed)).toThrow(/key "k2", which the ring no longer holds/);
    expect(() => openSealed(rotated, "webhook-secret", "whsec_1")).toThrow(/not a sealed value/);
  });
});
