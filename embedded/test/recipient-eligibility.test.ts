import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Who may be mailed, through the REST API of the real platform (test key:
// the sandbox keeps what would have gone out). The subscribers service answers
// it per address and category (suppression list included); delivery applies
// that answer, for POST /api/v1/emails/send, campaigns and triggers alike.

const MJML = (text: string) => `<mjml><mj-body><mj-section><mj-column><mj-text>${text}</mj-text></mj-column></mj-section></mj-body></mjml>`;
const ONE_CLICK = "List-Unsubscribe=One-Click";

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform("eligibility");
  for (const [slug, category] of [
    ["news", "marketing"],
    ["receipt", "transactional"],
  ] as const) {
    const res = await t.call("POST", "/api/v1/templates", { body: { name: slug, slug, subject: slug, category, mjml_content: MJML(`${slug} for {{email}}`) } });
    expect(res.status).toBe(201);
  }
}, 60_000);
afterAll(() => t?.close());

interface EmailJson {
  id: string;
  status: string;
  error: string | null;
}

/** Sends, then waits until the email is no longer queued. */
async function send(slug: string, to: string): Promise<EmailJson> {
  const sent = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: slug, to } });
  expect(sent.status).toBe(202);
  return eventually(
    async () => (await t.call("GET", `/api/v1/emails/${sent.body.id}`)).body as EmailJson,
    (email) => email.status !== "queued",
  );
}

const sandboxed = (id: string) => t.call("GET", `/api/v1/emails/${id}/sandbox`);

/** The one-click link of a sandboxed marketing mail's List-Unsubscribe header, as a gateway path. */
async function unsubscribeLinkOf(emailId: string): Promise<string> {
  const message = await sandboxed(emailId);
  expect(message.status).toBe(200);
  const header = String(message.body.headers["List-Unsubscribe"] ?? "");
  expect(header).toMatch(/^<.+\/unsubscribe\?token=.+>$/);
  const url = new URL(header.slice(1, -1));
  return `${url.pathname}${url.search}`;
}

async function subscriber(email: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.call("POST", "/api/v1/subscribers", { body: { email, ...extra } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

describe("a suppressed address (erased at its owner's request)", () => {
  it("gets no marketing mail: the email fails with recipient_suppressed and nothing is kept; transactional mail still goes", async () => {
    const id = await subscriber("erased@example.com");
    expect((await t.call("DELETE", `/api/v1/subscribers/${id}`)).status).toBe(204);
    const again = await t.call("POST", "/api/v1/subscribers", { body: { email: "Erased@Example.com" } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("subscriber_suppressed");

    const refused = await send("news", "erased@example.com");
    expect(refused).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
    expect((await sandboxed(refused.id)).status).toBe(404);
    // In any case of the address.
    expect(await send("news", "ERASED@example.com")).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
    // A receipt is not marketing: the person asked for it, and the suppression is of the mailing list.
    expect(await send("receipt", "erased@example.com")).toMatchObject({ status: "sent", error: null });
  });

  it("is refused at once: the send's answer already says failed, and so does every replay of its key", async () => {
    const id = await subscriber("atonce@example.com");
    expect((await t.call("DELETE", `/api/v1/subscribers/${id}`)).status).toBe(204);
    const body = { template_slug: "news", to: "atonce@example.com", idempotency_key: "refused-once" };
    const first = await t.call("POST", "/api/v1/emails/send", { body });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
    const replay = await t.call("POST", "/api/v1/emails/send", { body });
    expect(replay.status).toBe(202);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
  });

  it("stays unmailable after the one-click link of an earlier mail: the page's promise holds", async () => {
    // A marketing mail to an address that was no subscriber yet, then the
    // address signs up and is erased (suppressed); the old mail's link is clicked.
    const earlier = await send("news", "clicker@example.com");
    expect(earlier.status).toBe("sent");
    const link = await unsubscribeLinkOf(earlier.id);
    const id = await subscriber("clicker@example.com");
    expect((await t.call("DELETE", `/api/v1/subscribers/${id}`)).status).toBe(204);

    const page = await t.call("POST", link, { key: null, raw: ONE_CLICK, headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(page.status).toBe(200);
    expect(page.text).toContain("You are unsubscribed");
    // Nothing was (or could be) recorded for the erased person, yet the promise holds: no more marketing mail.
    expect(await send("news", "clicker@example.com")).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
    expect((await t.call("GET", "/api/v1/subscribers/by-email/clicker@example.com")).status).toBe(404);
  });

  it("is mailable again once the person opted in again (resubscribe)", async () => {
    const id = await subscriber("back@example.com");
    expect((await t.call("DELETE", `/api/v1/subscribers/${id}`)).status).toBe(204);
    expect(await send("news", "back@example.com")).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
    await subscriber("back@example.com", { resubscribe: true, resubscribe_reason: "double opt-in confirmed" });
    expect(await send("news", "back@example.com")).toMatchObject({ status: "sent" });
  });
});

describe("who gets which category", () => {
  it("unsubscribed: transactional only; bounced and complained: nothing; a stranger: both", async () => {
    const cases = [
      ["unsubscribed", "recipient_unsubscribed", "sent"],
      ["bounced", "recipient_bounced", "recipient_bounced"],
      ["complained", "recipient_complained", "recipient_complained"],
    ] as const;
    for (const [status, marketing, transactional] of cases) {
      const address = `${status}@example.com`;
      await subscriber(address, { status });
      expect({ status, news: await send("news", address) }).toMatchObject({ status, news: { status: "suppressed", error: marketing } });
      const receipt = await send("receipt", address);
      expect({ status, receipt }).toMatchObject({
        status,
        receipt: transactional === "sent" ? { status: "sent" } : { status: "suppressed", error: transactional },
      });
    }
    expect(await send("news", "stranger@example.com")).toMatchObject({ status: "sent" });
    expect(await send("receipt", "stranger@example.com")).toMatchObject({ status: "sent" });
  });
});
