import {
  ADDRESS_JSON_SCHEMA,
  ADDRESS_PATTERN,
  addressKey,
  checkAddress,
  describeAddressProblem,
  isValidAddress,
  normaliseAddress,
  parseAddress,
  type AddressProblem,
} from "../src/index";

// Real-world shapes that must pass: plus-addressing, dots, digits, hyphens,
// every atext special, subdomains, long TLDs, IDN domains as A-labels.
const VALID = [
  "ada@example.com",
  "Ada.Lovelace@Example.COM",
  "first.last+tag@mail.example.co.uk",
  "user_name-1@sub-domain.example.io",
  "x@example.museum",
  "1234567890@example.com",
  "o'brien@example.ie",
  "!#$%&'*+-/=?^_`{|}~@example.org",
  "user@xn--bcher-kva.example",
  "user@example.xn--p1ai",
  "a@b.co",
  `${"a".repeat(64)}@example.com`,
  `a@${"b".repeat(63)}.example.com`,
  `${"a".repeat(64)}@${["b".repeat(63), "c".repeat(63), "d".repeat(57)].join(".")}.com`,
];

const INVALID: Array<[string, AddressProblem]> = [
  ["ctl\u0001x@example.com", "control_character"],
  ["ctl\u0085x@example.com", "control_character"],
  ["tab\there@example.com", "control_character"],
  ["del\u007f@example.com", "control_character"],
  [".lead@example.com", "local_part_syntax"],
  ["trail.@example.com", "local_part_syntax"],
  ["a..b@example.com", "local_part_syntax"],
  [`${"a".repeat(65)}@example.com`, "local_part_too_long"],
  ['"quoted"@example.com', "quoted_local_part"],
  ['"john doe"@example.com', "quoted_local_part"],
  ["a b@example.com", "local_part_syntax"],
  ["a(comment)@example.com", "local_part_syntax"],
  ["a,b@example.com", "local_part_syntax"],
  ["user@[192.0.2.1]", "domain_syntax"],
  ["user@192.0.2.1", "top_level_domain"],
  ["user@localhost", "top_level_domain"],
  ["user@example.c", "top_level_domain"],
  ["user@example.123", "top_level_domain"],
  ["user@-example.com", "domain_syntax"],
  ["user@example-.com", "domain_syntax"],
  ["user@exa_mple.com", "domain_syntax"],
  ["user@example..com", "domain_syntax"],
  ["user@.example.com", "domain_syntax"],
  ["user@example.com.", "domain_syntax"],
  [`a@${"b".repeat(64)}.com`, "label_too_long"],
  ["no-at-sign", "no_at_sign"],
  ["@example.com", "no_at_sign"],
  ["user@", "no_at_sign"],
  ["a@b@example.com", "no_at_sign"],
  ["jörg@example.com", "not_ascii"],
  ["user@bücher.example", "not_ascii"],
  ["用户@例子.广告", "not_ascii"],
  [`${"a".repeat(64)}@${["b".repeat(63), "c".repeat(63), "d".repeat(58)].join(".")}.com`, "too_long"],
  ["", "required"],
];

describe("the address rule", () => {
  it.each(VALID)("accepts %j", (address) => {
    expect(checkAddress(address)).toBeUndefined();
    expect(isValidAddress(address)).toBe(true);
  });

  it.each(INVALID)("refuses %j (%s)", (address, problem) => {
    expect(checkAddress(address)).toBe(problem);
    expect(describeAddressProblem(problem)).toMatch(/\S/);
  });

  it("says why, in words, for the internationalised case", () => {
    expect(describeAddressProblem("not_ascii")).toMatch(/A-label \(xn--…\)/);
  });
});

describe("the published pattern", () => {
  // ajv compiles patterns with the `u` flag; the document's readers may not.
  const withLength = (value: string) => value.length <= ADDRESS_JSON_SCHEMA.maxLength;
  const patterns = [new RegExp(ADDRESS_PATTERN), new RegExp(ADDRESS_PATTERN, "u")];

  it("agrees with the rule on every case above", () => {
    for (const pattern of patterns) {
      for (const address of VALID) expect({ address, ok: pattern.test(address) && withLength(address) }).toEqual({ address, ok: true });
      for (const [address] of INVALID) expect({ address, ok: pattern.test(address) && withLength(address) }).toEqual({ address, ok: false });
    }
  });

  it("is anchored and states the length limits", () => {
    expect(ADDRESS_PATTERN.startsWith("^")).toBe(true);
    expect(ADDRESS_PATTERN.endsWith("$")).toBe(true);
    expect(ADDRESS_JSON_SCHEMA).toMatchObject({ type: "string", maxLength: 254, pattern: ADDRESS_PATTERN });
    expect(new RegExp(ADDRESS_PATTERN).test("ada@example.com\n")).toBe(false);
  });
});

describe("normalising and parsing", () => {
  it("trims surrounding spaces and keeps case; the key is lower-case", () => {
    expect(normaliseAddress("  Ada@Example.com ")).toBe("Ada@Example.com");
    expect(addressKey(" Ada@Example.COM")).toBe("ada@example.com");
    expect(parseAddress(" Ada@Example.com ")).toEqual({ ok: true, address: "Ada@Example.com" });
  });

  it("never removes a character inside the address: control characters are refused, not stripped", () => {
    const parsed = parseAddress("ctl\u0001x@example.com");
    expect(parsed).toMatchObject({ ok: false, problem: "control_character" });
    expect(parseAddress("ada@example.com\r\n")).toMatchObject({ ok: false, problem: "control_character" });
  });

  it("refuses what is not a string or is blank", () => {
    expect(parseAddress(undefined)).toMatchObject({ ok: false, problem: "required" });
    expect(parseAddress(42)).toMatchObject({ ok: false, problem: "required" });
    expect(parseAddress("   ")).toMatchObject({ ok: false, problem: "required" });
  });
});
