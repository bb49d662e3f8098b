import { runInNewContext } from "node:vm";
import { checkLabelledMac, labelledMac, parseKeyRing } from "@emailsvc/tokens";
import { createChallenge, encodeSolution, sha256Hex, solveChallenge, verifySolution, type Challenge, type ChallengeSigner } from "../src/domain/proof-of-work";
import { formSettingsProblems, postOrigin, readSignup, type FormSettings, type SignupFormView } from "../src/domain/signup-form";
import { SIGNUP_SCRIPT } from "../src/page/signup-script";

// Pure logic of the signup forms' bot defence: the proof of work (issued,
// solved, checked: signature, form, expiry, number), the browser's solver
// script run against a challenge, and the rules of a form's settings and of
// a post's fields. Single use is the storage's (a replay is tested through the
// real page, embedded/test/signup-forms.test.ts).

const FORM = "frm_0123456789abcdefghjkmnpqrs";
const OTHER_FORM = "frm_zzzzzzzzzzzzzzzzzzzzzzzzzz";
const ring = parseKeyRing(`k1:${Buffer.alloc(32, 7).toString("base64")}`);
const signer: ChallengeSigner = {
  sign: (c) => labelledMac(ring, "signup_challenge", c),
  check: (c, s) => checkLabelledMac(ring, "signup_challenge", c, s),
};
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);

function issue(maxNumber = 2000, formId = FORM): Challenge {
  return createChallenge(signer, { formId, now: NOW, ttlMs: 600_000, maxNumber });
}

function solved(challenge: Challenge): string {
  const n = solveChallenge(challenge);
  if (n === undefined) throw new Error("unsolvable challenge");
  return encodeSolution(challenge, n);
}

describe("proof of work", () => {
  it("a solved challenge verifies, for its form, until it expires", () => {
    const challenge = issue();
    const field = solved(challenge);
    const verdict = verifySolution(signer, field, FORM, NOW + 1000);
    expect(verdict).toEqual({ ok: true, challenge: challenge.challenge, expiresAt: Math.floor((NOW + 600_000) / 1000) * 1000 });
    expect(verifySolution(signer, field, FORM, NOW + 600_000)).toEqual({ ok: false, reason: "expired" });
    expect(verifySolution(signer, field, OTHER_FORM, NOW)).toEqual({ ok: false, reason: "wrong_form" });
  });

  it("the number lies within maxnumber and the challenge hides it", () => {
    for (let i = 0; i < 20; i++) {
      const challenge = issue(50);
      const n = solveChallenge(challenge)!;
      expect(n).toBeGreaterThanOrEqual(0);
      expect(n).toBeLessThanOrEqual(50);
      expect(challenge.challenge).toBe(sha256Hex(challenge.salt + n));
    }
  });

  it("a wrong number, a forged signature, another key and an altered expiry are refused", () => {
    const challenge = issue();
    const n = solveChallenge(challenge)!;
    expect(verifySolution(signer, encodeSolution(challenge, n + 1), FORM, NOW)).toEqual({ ok: false, reason: "wrong_number" });
    // A challenge of the bot's own making, with a number it knows: its signature is not ours.
    const own = { ...challenge, salt: `${"0".repeat(24)}.${FORM}.${Math.floor(NOW / 1000) + 600}`, challenge: sha256Hex(`${"0".repeat(24)}.${FORM}.${Math.floor(NOW / 1000) + 600}` + 1) };
    expect(verifySolution(signer, encodeSolution(own, 1), FORM, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    const otherRing = parseKeyRing(`k1:${Buffer.alloc(32, 9).toString("base64")}`);
    const otherSigner: ChallengeSigner = { sign: (c) => labelledMac(otherRing, "signup_challenge", c), check: () => false };
    const foreign = createChallenge(otherSigner, { formId: FORM, now: NOW, ttlMs: 600_000, maxNumber: 100 });
    expect(verifySolution(signer, solved(foreign), FORM, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    // A later expiry in the salt: the hash no longer matches the signed challenge.
    const stretched = { ...challenge, salt: challenge.salt.replace(/\.[0-9]+$/, `.${Math.floor(NOW / 1000) + 86_400}`) };
    expect(verifySolution(signer, encodeSolution(stretched, n), FORM, NOW + 700_000)).toEqual({ ok: false, reason: "wrong_number" });
  });

  it("garbage is malformed, never an exception", () => {
    for (const field of ["", "x", "!!!", Buffer.from("{}").toString("base64url"), Buffer.from('{"algorithm":"SHA-1"}').toString("base64url"), "a".repeat(5000)]) {
      expect(verifySolution(signer, field, FORM, NOW)).toEqual({ ok: false, reason: "malformed" });
    }
  });

  it("the browser's script solves the challenge of the check page and posts a solution that verifies", async () => {
    const challenge = issue(5000);
    const inputs: Array<{ name: string; value: string; type?: string }> = [];
    let submitted = 0;
    const form = {
      getAttribute: (name: string) => (name === "data-emailsvc-challenge" ? JSON.stringify(challenge) : null),
      querySelector: (selector: string) => inputs.find((i) => selector === `input[name="${i.name}"]`) ?? null,
      appendChild: (input: { name: string; value: string }) => inputs.push(input),
    };
    const done = new Promise<void>((resolve) => {
      const context = {
        document: {
          querySelector: (selector: string) => (selector === "form[data-emailsvc-challenge]" ? form : null),
          querySelectorAll: () => [],
          createElement: () => ({ name: "", value: "" }),
        },
        HTMLFormElement: { prototype: { submit: () => { submitted++; resolve(); } } },
        setTimeout,
        btoa,
        JSON,
        Math,
        Array,
      };
      runInNewContext(SIGNUP_SCRIPT, context);
    });
    await done;
    expect(submitted).toBe(1);
    const pow = inputs.find((i) => i.name === "pow")!.value;
    expect(verifySolution(signer, pow, FORM, NOW)).toMatchObject({ ok: true, challenge: challenge.challenge });
  });
});

const SETTINGS: FormSettings = {
  name: "Newsletter",
  tags: ["news"],
  optionalTags: ["offers", "events"],
  askLocale: true,
  fields: [
    { name: "first_name", label: "First name", type: "text", required: true },
    { name: "age", label: "Age", type: "number", required: false },
    { name: "terms", label: "I agree", type: "boolean", required: true },
  ],
  successUrl: "https://shop.example.com/thanks",
  errorUrl: "",
  allowedOrigins: ["https://shop.example.com", "http://localhost:3000"],
  consentText: "I want the newsletter.",
  consentVersion: "",
};

describe("a form's settings", () => {
  it("a sound form has no problems", () => {
    expect(formSettingsProblems(SETTINGS)).toEqual([]);
  });

  it("names each broken rule with its field", () => {
    const fields = formSettingsProblems({
      ...SETTINGS,
      name: " ",
      optionalTags: ["news"],
      fields: [
        { name: "email", label: "x", type: "text", required: false },
        { name: "Bad", label: "x", type: "text", required: false },
      ],
      successUrl: "http://shop.example.com/thanks",
      allowedOrigins: ["https://shop.example.com/", "http://shop.example.com", "https://user@shop.example.com"],
      consentText: "",
    }).map((p) => p.field);
    expect(fields).toEqual(["name", "optional_tags", "fields[0].name", "fields[1].name", "success_url", "allowed_origins[0]", "allowed_origins[1]", "allowed_origins[2]", "consent_text"]);
    expect(formSettingsProblems({ ...SETTINGS, allowedOrigins: [] }).map((p) => p.field)).toEqual(["allowed_origins"]);
  });

  it("a post's origin is Origin, else Referer's; a null Origin says nothing", () => {
    expect(postOrigin("https://a.example", "https://b.example/x")).toBe("https://a.example");
    expect(postOrigin(undefined, "https://b.example/x?y")).toBe("https://b.example");
    expect(postOrigin("null", "https://b.example/x")).toBeUndefined();
    expect(postOrigin(undefined, undefined)).toBeUndefined();
  });
});

describe("a post's fields", () => {
  const form: SignupFormView = { ...SETTINGS, id: FORM, createdAt: NOW, updatedAt: NOW };
  const post = (fields: Record<string, string | string[]>) => {
    const p = new URLSearchParams();
    for (const [name, value] of Object.entries(fields)) for (const v of [value].flat()) p.append(name, v);
    return p;
  };

  it("become the signup: the form's tags, the chosen ones, typed metadata, the language", () => {
    expect(readSignup(form, post({ email: " ada@example.com ", tags: ["events"], first_name: "Ada", age: "36", terms: "true", locale: "de" }))).toEqual({
      ok: true,
      signup: { email: "ada@example.com", tags: ["news", "events"], metadata: { first_name: "Ada", age: 36, terms: true }, locale: "de" },
    });
  });

  it("refuse what is missing or wrong, naming the field", () => {
    const base = { email: "ada@example.com", first_name: "Ada", terms: "true" };
    expect(readSignup(form, post({ ...base, email: "" }))).toEqual({ ok: false, refusal: "missing_field", field: "email" });
    expect(readSignup(form, post({ ...base, email: "not-an-address" }))).toEqual({ ok: false, refusal: "invalid_email", field: "email" });
    expect(readSignup(form, post({ ...base, first_name: "" }))).toEqual({ ok: false, refusal: "missing_field", field: "first_name" });
    expect(readSignup(form, post({ ...base, terms: "" }))).toEqual({ ok: false, refusal: "missing_field", field: "terms" });
    expect(readSignup(form, post({ ...base, age: "12abc" }))).toEqual({ ok: false, refusal: "invalid_field", field: "age" });
    // A tag the form does not offer (a private segment, say) is never joined.
    expect(readSignup(form, post({ ...base, tags: "vip" }))).toEqual({ ok: false, refusal: "invalid_field", field: "tags" });
    expect(readSignup(form, post({ ...base, locale: "xx" }))).toEqual({ ok: false, refusal: "invalid_field", field: "locale" });
  });
});
