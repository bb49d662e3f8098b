import { delivery } from "@emailsvc/proto";
import { HEADER_ACCOUNT, HEADER_MODE } from "@emailsvc/tenancy";
import { FAKE_VARIABLES_LIMIT } from "./support/fake-delivery";
import { startHarness, type Harness } from "./support/harness";

let h: Harness;
let templateId: string;
beforeAll(async () => {
  h = await startHarness();
  const created = await h.request("POST", "/api/v1/templates", {
    body: {
      name: "Welcome",
      slug: "welcome",
      subject: "Welcome, {{first_name}}!",
      mjml_content: "<mjml><mj-body><mj-text>Hello {{first_name}}</mj-text></mj-body></mjml>",
      category: "transactional",
    },
  });
  templateId = created.body.id;
});
afterAll(() => h.close());
beforeEach(() => {
  h.delivery.calls.length = 0;
});

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
let n = 0;
/** A fresh recipient per call, so that tests do not share emails. */
const recipient = () => `user${++n}@example.com`;
const send = (body: Record<string, unknown>, headers?: Record<string, string>) =>
  h.request("POST", "/api/v1/emails/send", { body: { template_slug: "welcome", to: recipient(), ...body }, ...(headers ? { headers } : {}) });

function expectNoDeliveryCall() {
  expect(h.delivery.calls).toHaveLength(0);
}

describe("send", () => {
  it("answers 202 Accepted with the email as queued and its Location", async () => {
    const to = recipient();
    const res = await h.request("POST", "/api/v1/emails/send", {
      body: { template_slug: "welcome", to, variables: { first_name: "Ada" } },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^eml_/),
      status: "queued",
      to,
      template_id: templateId,
      template_slug: "welcome",
      template_version: 1,
      idempotency_key: null,
      queued_at: expect.stringMatching(RFC3339_UTC),
      error: null,
    });
    expect(res.headers.get("location")).toBe(`/api/v1/emails/${res.body.id}`);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
  });

  it("answers a recipient delivery refused at once as suppressed with the reason, the same on a replay", async () => {
    const to = recipient();
    h.delivery.refuse.set(to, delivery.FailureReason.RECIPIENT_SUPPRESSED);
    const body = { template_slug: "welcome", to, idempotency_key: "refused-1" };
    const res = await h.request("POST", "/api/v1/emails/send", { body });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
    const replay = await h.request("POST", "/api/v1/emails/send", { body });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(res.body);
    expect((await h.request("GET", `/api/v1/emails/${res.body.id}`)).body).toMatchObject({ status: "suppressed", error: "recipient_suppressed" });
  });

  it("maps the body to SendEmail in the caller's tenant; left-out variables are sent as {}", async () => {
    const to = recipient();
    await h.request("POST", "/api/v1/emails/send", { body: { template_slug: "welcome", to } });
    const call = h.delivery.lastCall!;
    expect(call.method).toBe("sendEmail");
    expect(call.headers.get(HEADER_ACCOUNT)).toBe(h.accountId);
    expect(call.headers.get(HEADER_MODE)).toBe("test");
    expect(call.hasDeadline).toBe(true);
    const email = h.delivery.queued.at(-1)!;
    expect({ to: email.to, slug: email.templateSlug, key: email.idempotencyKey }).toEqual({ to, slug: "welcome", key: "" });
  });

  it("sends with the template version current at send time", async () => {
    const other = await startHarness();
    try {
      const created = await other.request("POST", "/api/v1/templates", {
        body: { name: "V", slug: "v", subject: "one", mjml_content: "<mjml></mjml>", category: "transactional" },
      });
      await other.request("PATCH", `/api/v1/templates/${created.body.id}`, { body: { subject: "two" } });
      const res = await other.request("POST", "/api/v1/emails/send", { body: { template_slug: "v", to: "a@example.com" } });
      expect(res.body.template_version).toBe(2);
    } finally {
      await other.close();
    }
  });
});

describe("idempotency", () => {
  it("a repeat with the same key and body answers the original status and body, with Idempotent-Replayed, and sends nothing more", async () => {
    const body = { template_slug: "welcome", to: recipient(), variables: { first_name: "Ada" }, idempotency_key: "order-1001" };
    const first = await h.request("POST", "/api/v1/emails/send", { body });
    expect(first.status).toBe(202);
    expect(first.body.idempotency_key).toBe("order-1001");
    const before = h.delivery.queued.length;
    // The email moves on before the client retries.
    h.delivery.markSent(first.body.id);

    const replay = await h.request("POST", "/api/v1/emails/send", { body });
    expect(replay.status).toBe(202);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.headers.get("location")).toBe(first.headers.get("location"));
    expect(replay.text).toBe(first.text);
    expect(h.delivery.queued.length).toBe(before);

    // Its current state is where the Location points.
    const current = await h.request("GET", first.headers.get("location")!);
    expect(current.body.status).toBe("sent");
  });

  it("takes the key from the Idempotency-Key header (Stripe)", async () => {
    const to = recipient();
    const first = await send({ to }, { "Idempotency-Key": "hdr-1" });
    expect(first.status).toBe(202);
    expect(first.body.idempotency_key).toBe("hdr-1");
    expect(h.delivery.queued.at(-1)!.idempotencyKey).toBe("hdr-1");
    const replay = await h.request("POST", "/api/v1/emails/send", {
      body: { template_slug: "welcome", to },
      headers: { "idempotency-key": "hdr-1" },
    });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
  });

  it("the header and the body field name one key: equal is fine, and a replay may use either", async () => {
    const to = recipient();
    const first = await send({ to, idempotency_key: "both-1" }, { "Idempotency-Key": "both-1" });
    expect(first.status).toBe(202);
    const byBody = await h.request("POST", "/api/v1/emails/send", { body: { template_slug: "welcome", to, idempotency_key: "both-1" } });
    expect(byBody.headers.get("idempotent-replayed")).toBe("true");
    expect(byBody.body.id).toBe(first.body.id);
  });

  it("a header key and a body key that differ are 400, nothing sent", async () => {
    const res = await send({ idempotency_key: "a" }, { "Idempotency-Key": "b" });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: "validation_failed",
      errors: [{ field: "idempotency_key", message: "differs from the Idempotency-Key header" }],
    });
    expectNoDeliveryCall();
  });

  it.each([
    ["empty", ""],
    ["over-long", "k".repeat(256)],
  ])("an %s Idempotency-Key header is 400 naming it", async (_name, key) => {
    const res = await send({}, { "Idempotency-Key": key });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "Idempotency-Key", message: expect.any(String) }]);
    expectNoDeliveryCall();
  });

  it("a body key longer than 255 characters is 400", async () => {
    const res = await send({ idempotency_key: "k".repeat(256) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "idempotency_key", message: "must NOT have more than 255 characters" }]);
  });

  it("the same key with another body is 409 idempotency_key_reused, nothing sent", async () => {
    const to = recipient();
    expect((await send({ to, idempotency_key: "reuse-1" })).status).toBe(202);
    const before = h.delivery.queued.length;
    const res = await send({ to, idempotency_key: "reuse-1", variables: { first_name: "Someone else" } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "idempotency_key_reused", title: "Idempotency key reused" });
    expect(h.delivery.queued.length).toBe(before);
  });

  it("left-out variables and {} are one body", async () => {
    const to = recipient();
    await send({ to, idempotency_key: "vars-1" });
    const res = await send({ to, idempotency_key: "vars-1", variables: {} });
    expect(res.status).toBe(202);
    expect(res.headers.get("idempotent-replayed")).toBe("true");
  });

  it("keys are per tenant: another key mode may use the same key for another email", async () => {
    const live = await h.running.gateway.accounts.createApiKey(h.accountId, { mode: "live" });
    await h.request("POST", "/api/v1/templates", {
      key: live.key,
      body: { name: "Welcome", slug: "welcome", subject: "Hi", mjml_content: "<mjml></mjml>", category: "transactional" },
    });
    const test = await send({ idempotency_key: "tenant-1" });
    const res = await h.request("POST", "/api/v1/emails/send", {
      key: live.key,
      body: { template_slug: "welcome", to: recipient(), idempotency_key: "tenant-1" },
    });
    expect(res.status).toBe(202);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
    expect(res.body.id).not.toBe(test.body.id);
    expect(h.delivery.lastCall!.headers.get(HEADER_MODE)).toBe("live");
  });
});

describe("bad send input", () => {
  it.each([
    ["template_slug", { to: "a@example.com" }],
    ["to", { template_slug: "welcome" }],
  ])("a missing %s is 400, nothing sent", async (field, body) => {
    const res = await h.request("POST", "/api/v1/emails/send", { body });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field, message: "is required" }]);
    expectNoDeliveryCall();
  });

  it.each([[["a"]], ["name=Ada"], [42], [null], [true]])("variables that are not an object (%j) are 400 naming variables", async (variables) => {
    const res = await send({ variables });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "variables", message: "must be object" }]);
    expectNoDeliveryCall();
  });

  it("unknown fields are 400 naming them", async () => {
    const res = await send({ status: "sent", sender: "boss@example.com", from: { email: "boss@example.com", address: "x" } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { field: "status", message: "is not a known field" },
        { field: "sender", message: "is not a known field" },
        { field: "from.address", message: "is not a known field" },
      ]),
    );
    expectNoDeliveryCall();
  });

  it("a From or Reply-To that is no address, or a display name with a line break, is 400 naming it", async () => {
    const res = await send({ from: { email: "not an address", name: "Boss\r\nBcc: x@example.com" }, reply_to: "nobody" });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["from.email", "from.name", "reply_to"]);
    expect((await send({ from: "boss@example.com" })).body.errors).toEqual([{ field: "from", message: "must be object" }]);
    expectNoDeliveryCall();
  });

  it("wrong types are 400 naming each field", async () => {
    const res = await h.request("POST", "/api/v1/emails/send", { body: { template_slug: 7, to: ["a@example.com"], idempotency_key: 1 } });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["idempotency_key", "template_slug", "to"]);
    expectNoDeliveryCall();
  });

  it("an unknown slug is 404 template_not_found, nothing sent", async () => {
    const before = h.delivery.queued.length;
    const res = await send({ template_slug: "nope" });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: "template_not_found", title: "Template not found", detail: "no template with slug nope" });
    expect(h.delivery.queued.length).toBe(before);
  });

  it("an invalid recipient is 400 from the service, field errors passed through", async () => {
    const res = await send({ to: "not-an-address" });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "validation_failed", errors: [{ field: "to", message: "is not a valid email address" }] });
  });

  it("variables too large for the service are 413 from the service", async () => {
    const res = await send({ variables: { blob: "x".repeat(FAKE_VARIABLES_LIMIT) } });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("variables_too_large");
  });

  it("a body above 256 KiB is 413 at the gateway", async () => {
    const res = await send({ variables: { blob: "x".repeat(300 * 1024) } });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("payload_too_large");
    expectNoDeliveryCall();
  });

  it("a GET of /emails/send is an email lookup (404); other methods are 405", async () => {
    expect((await h.request("GET", "/api/v1/emails/send")).status).toBe(404);
    const res = await h.request("PUT", "/api/v1/emails/send");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("POST");
  });
});

describe("emails", () => {
  it("gets a queued email with null timestamps and fields that are not known yet", async () => {
    const sent = await send({ idempotency_key: "get-1" });
    const res = await h.request("GET", `/api/v1/emails/${sent.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: sent.body.id,
      status: "queued",
      to: sent.body.to,
      template_id: templateId,
      template_slug: "welcome",
      template_version: 1,
      idempotency_key: "get-1",
      provider: "sandbox",
      message_id: null,
      provider_message_id: null,
      error: null,
      attempts: 0,
      queued_at: sent.body.queued_at,
      sent_at: null,
      failed_at: null,
      updated_at: expect.stringMatching(RFC3339_UTC),
      bounce: null,
      history: [],
      next_attempt_at: null,
    });
  });

  it("shows a sent email with its Message-ID and sent_at", async () => {
    const sent = await send({});
    h.delivery.markSent(sent.body.id, "<m-1@example.test>");
    const res = await h.request("GET", `/api/v1/emails/${sent.body.id}`);
    expect(res.body).toMatchObject({
      status: "sent",
      message_id: "<m-1@example.test>",
      attempts: 1,
      sent_at: expect.stringMatching(RFC3339_UTC),
      failed_at: null,
      idempotency_key: null,
    });
  });

  it("shows a failed email with the provider's reason", async () => {
    const sent = await send({});
    h.delivery.markFailed(sent.body.id, "550 5.1.1 mailbox unavailable");
    const res = await h.request("GET", `/api/v1/emails/${sent.body.id}`);
    expect(res.body).toMatchObject({ status: "failed", error: "550 5.1.1 mailbox unavailable", failed_at: expect.stringMatching(RFC3339_UTC), sent_at: null });
  });

  it("is 404 for an unknown id and for another tenant's email", async () => {
    expect((await h.request("GET", "/api/v1/emails/eml_nope")).status).toBe(404);
    const sent = await send({});
    const other = await h.running.gateway.accounts.createAccount({ name: "Other", plan: "starter" });
    const otherKey = await h.running.gateway.accounts.createApiKey(other.id, { mode: "test" });
    expect((await h.request("GET", `/api/v1/emails/${sent.body.id}`, { key: otherKey.key })).status).toBe(404);
    expect((await h.request("GET", `/api/v1/emails/${sent.body.id}/sandbox`, { key: otherKey.key })).status).toBe(404);
  });

  it("lists emails with limit and next_cursor", async () => {
    const other = await startHarness();
    try {
      await other.request("POST", "/api/v1/templates", {
        body: { name: "L", slug: "l", subject: "s", mjml_content: "<mjml></mjml>", category: "transactional" },
      });
      for (let i = 0; i < 3; i++) await other.request("POST", "/api/v1/emails/send", { body: { template_slug: "l", to: `l${i}@example.com` } });
      const first = await other.request("GET", "/api/v1/emails?limit=2");
      expect(first.status).toBe(200);
      expect(first.body.items.map((e: { to: string }) => e.to)).toEqual(["l0@example.com", "l1@example.com"]);
      expect(first.body.items[0]).toMatchObject({ status: "queued", sent_at: null });
      const second = await other.request("GET", `/api/v1/emails?limit=2&cursor=${first.body.next_cursor}`);
      expect(second.body).toEqual({ items: [expect.objectContaining({ to: "l2@example.com" })], next_cursor: null });
      expect((await other.request("GET", "/api/v1/emails?limit=0")).status).toBe(400);
    } finally {
      await other.close();
    }
  });
});

describe("sandbox", () => {
  it("shows the whole message the sandbox kept", async () => {
    const sent = await send({ variables: { first_name: "<Ada>" } });
    const res = await h.request("GET", `/api/v1/emails/${sent.body.id}/sandbox`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      email_id: sent.body.id,
      from: "Acme <noreply@example.test>",
      to: sent.body.to,
      subject: "Welcome, <Ada>!",
      html: expect.stringContaining("Hello &#60;Ada&#62;"),
      text: "Hello <Ada>",
      headers: { "Message-ID": `<${sent.body.id}@example.test>`, "Content-Type": "multipart/alternative" },
      captured_at: expect.stringMatching(RFC3339_UTC),
    });
    expect(h.delivery.lastCall!.method).toBe("getSandboxMessage");
  });

  it("is 404 for an email the sandbox did not keep", async () => {
    h.delivery.sandbox = false;
    try {
      const sent = await send({});
      const res = await h.request("GET", `/api/v1/emails/${sent.body.id}/sandbox`);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe("sandbox_message_not_found");
    } finally {
      h.delivery.sandbox = true;
    }
  });
});
