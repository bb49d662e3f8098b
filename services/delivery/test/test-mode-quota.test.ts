import { Code } from "@connectrpc/connect";
import { readError } from "@emailsvc/errors";
import { as, startHarness, tenant, type Harness, type StoreKind } from "./harness.js";

// The test-mode quota (TEST_MODE_DAILY_LIMIT) as SendEmail charges it, over
// gRPC on both stores. Issue 16's second review: the charge came before the
// insert, so concurrent requests with one idempotency key were each charged
// for the one email they share; past the quota the duplicates were even
// refused (429) while their email was queued. Only the request whose insert
// stores the email pays.

const RECEIPT = { slug: "receipt", subject: "Receipt", html: "<p>Thank you</p>" };
const LIMIT = 5;

describe.each<StoreKind>(["embedded", "mongodb"])("the test-mode quota of SendEmail (%s)", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ store: kind, testModeDailyLimit: LIMIT });
  });
  afterAll(() => h?.close());

  it("charges concurrent requests with one idempotency key once: each answers the one email, and the rest of the day's quota stays", async () => {
    const t = tenant("test");
    h.templates.put(t, RECEIPT);
    const send = (to: string, idempotencyKey = "") => h.client.sendEmail({ templateSlug: "receipt", to, idempotencyKey }, as(t));

    // As many at once as the quota holds, so that none is refused whatever it is charged.
    const answers = await Promise.all(Array.from({ length: LIMIT - 1 }, () => send("buyer@example.com", "order-17")));
    const ids = new Set(answers.map((a) => a.email!.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => !a.replayed)).toHaveLength(1);

    // One email was queued, so LIMIT - 1 others fit today, and no more.
    const others: string[] = [];
    for (let i = 1; i < LIMIT; i += 1) {
      const other = await send(`buyer-${i}@example.com`).catch((err: unknown) => readError(err).errorCode);
      others.push(typeof other === "string" ? other : "queued");
    }
    expect(others).toEqual(Array(LIMIT - 1).fill("queued"));
    let over: unknown;
    await send("one-too-many@example.com").catch((err: unknown) => (over = err));
    expect(readError(over)).toMatchObject({ code: Code.ResourceExhausted, errorCode: "test_mode_quota_exceeded" });
    // A replay of the key is no new email: answered, never charged.
    expect((await send("buyer@example.com", "order-17")).replayed).toBe(true);
  });
});
