import { startTestPlatform, type TestPlatform } from "./support/platform-client";

// Issue 16, defect 4: a campaign's metadata condition on a key named like a
// built-in property (`constructor`, `toString`, `hasOwnProperty` …) matched
// every subscriber with `exists: true` and none with `exists: false` on the
// embedded store, while MongoDB answered by the subscribers' own metadata.
// Through REST, on both stores, the recipient count must be the same and
// right; `__proto__`, which no store keeps as a key, is refused with a 400
// (in a body by the gateway's JSON reader, as a condition's key by the
// subscribers' metadata key rule).

describe.each(["embedded", "mongodb"] as const)("metadata conditions on keys named like built-in properties (%s)", (store) => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform(`metadata-keys-${store}`, undefined, { mongo: store === "mongodb" });
    const people: Array<{ email: string; metadata?: Record<string, string | number> }> = [
      { email: "own-constructor@example.com", metadata: { constructor: "own", plan: "pro" } },
      { email: "own-tostring@example.com", metadata: { toString: "x", valueOf: 3 } },
      { email: "plain@example.com", metadata: { plan: "free" } },
      { email: "none@example.com" },
    ];
    for (const person of people) expect((await t.call("POST", "/api/v1/subscribers", { body: person })).status).toBe(201);
  }, 60_000);
  afterAll(() => t?.close());

  const count = async (metadata: unknown[]) => {
    const res = await t.call("POST", "/api/v1/campaigns/recipient-count", { body: { tag_filter: { metadata } } });
    expect(res.status).toBe(200);
    return res.body.count as number;
  };

  it("counts only the subscribers whose metadata holds the key", async () => {
    expect(await count([{ key: "constructor", exists: true }])).toBe(1);
    expect(await count([{ key: "constructor", exists: false }])).toBe(3);
    expect(await count([{ key: "constructor", equals: "own" }])).toBe(1);
    expect(await count([{ key: "toString", exists: true }])).toBe(1);
    expect(await count([{ key: "toString", exists: false }])).toBe(3);
    expect(await count([{ key: "valueOf", in: [3, 4] }])).toBe(1);
    for (const key of ["hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "__defineGetter__", "length"]) {
      expect({ key, count: await count([{ key, exists: true }]) }).toEqual({ key, count: 0 });
      expect({ key, count: await count([{ key, exists: false }]) }).toEqual({ key, count: 4 });
    }
    expect(await count([{ key: "constructor", exists: false }, { key: "plan", equals: "free" }])).toBe(1);
  });

  it("refuses __proto__ as a metadata key, in a subscriber and in a condition, with a 400 naming it", async () => {
    const created = await t.call("POST", "/api/v1/subscribers", { raw: '{"email":"proto@example.com","metadata":{"__proto__":"x"}}' });
    expect(created.status).toBe(400);
    expect(created.body.code).toBe("invalid_json");
    expect((await t.call("GET", "/api/v1/subscribers/by-email/proto@example.com")).status).toBe(404);

    const counted = await t.call("POST", "/api/v1/campaigns/recipient-count", { body: { tag_filter: { metadata: [{ key: "__proto__", exists: false }] } } });
    expect(counted.status).toBe(400);
    expect(counted.body.code).toBe("validation_failed");
    expect(counted.body.errors).toEqual([expect.objectContaining({ field: "tag_filter.metadata[0].key" })]);
  });
});
