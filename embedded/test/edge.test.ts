import { Code, createClient } from "@connectrpc/connect";
import { delivery, SubscriberService } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { callHeaders } from "@emailsvc/tenancy";
import { JSON_MAX_DEPTH } from "../../services/gateway/src/http/json-depth";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// What an attacker or a schema fuzzer sends the edge, through the real
// platform (gateway, services, gRPC between them, embedded storage): each
// test is a regression test of a defect of issue 6.

const MJML = "<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{a.a.a}}</mj-text></mj-column></mj-section></mj-body></mjml>";

/** `{"a":{"a":…"x"…}}` with `levels` objects. */
const nested = (levels: number) => '{"a":'.repeat(levels) + '"x"' + "}".repeat(levels);

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform("edge");
});
afterAll(() => t?.close());

describe("JSON depth (defect 4)", () => {
  it("answers 400 json_too_deep, not 500, for metadata nested 50 levels", async () => {
    const res = await t.call("POST", "/api/v1/subscribers", { raw: `{"email":"deep@example.com","metadata":${nested(50)}}` });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("json_too_deep");
    expect(res.body.detail).toContain(String(JSON_MAX_DEPTH));
    expect((await t.call("GET", "/api/v1/subscribers/by-email/deep@example.com")).status).toBe(404);
  });

  it("answers 400 for variables nested 50 levels on send, and sends nothing", async () => {
    await t.call("POST", "/api/v1/templates", { body: { name: "Deep", slug: "deep", subject: "Deep", category: "transactional", mjml_content: MJML } });
    const res = await t.call("POST", "/api/v1/emails/send", { raw: `{"template_slug":"deep","to":"deep@example.com","variables":${nested(50)}}` });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("json_too_deep");
    expect((await t.call("GET", "/api/v1/emails")).body.items).toHaveLength(0);
  });

  it("answers 400 for 100,000 nested arrays and keeps serving", async () => {
    const arrays = "[".repeat(100_000) + "]".repeat(100_000);
    const templateId = (await t.call("GET", "/api/v1/templates")).body.items.find((x: { slug: string }) => x.slug === "deep").id;
    for (const [path, raw] of [
      ["/api/v1/tags", arrays],
      [`/api/v1/templates/${templateId}/preview`, `{"variables":{"a":${arrays}}}`],
      ["/api/v1/subscribers", `{"email":"arrays@example.com","metadata":{"__proto__":${arrays}}}`],
    ] as const) {
      const res = await t.call("POST", path, { raw });
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 400, code: "json_too_deep" });
    }
    expect((await t.call("GET", "/healthz", { key: null })).status).toBe(200);
  });

  it("takes variables at the limit through the gRPC hops: preview, send, render", async () => {
    const variables = nested(JSON_MAX_DEPTH - 1);
    const templateId = (await t.call("GET", "/api/v1/templates")).body.items.find((x: { slug: string }) => x.slug === "deep").id;
    const preview = await t.call("POST", `/api/v1/templates/${templateId}/preview`, { raw: `{"variables":${variables}}` });
    expect(preview.status).toBe(200);
    const sent = await t.call("POST", "/api/v1/emails/send", { raw: `{"template_slug":"deep","to":"deep@example.com","variables":${variables}}` });
    expect(sent.status).toBe(202);
    const email = await eventually(
      () => t.call("GET", `/api/v1/emails/${sent.body.id}`),
      (res) => res.body.status !== "queued",
    );
    expect(email.body.status).toBe("sent");
  });
});

describe("email addresses (defect 5)", () => {
  beforeAll(async () => {
    await t.call("POST", "/api/v1/templates", { body: { name: "Addr", slug: "addr", subject: "Hi", category: "transactional", mjml_content: MJML } });
  });

  // Each address of the issue, and what it was turned into or why it is wrong.
  const REFUSED = [
    ["a control character", "ctl\u0001x@example.com"],
    ["NEL (U+0085)", "nel\u0085x@example.com"],
    ["a leading dot", ".lead@example.com"],
    ["a double dot", "a..b@example.com"],
    ["a 65-character local part", `${"a".repeat(65)}@example.com`],
    ["a quoted local part", '"a b"@example.com'],
    ["a UTF-8 local part", "jörg@example.com"],
    ["a U-label domain", "user@bücher.example"],
  ] as const;

  it.each(REFUSED)("refuses %s as a subscriber's email, storing nothing", async (_what, email) => {
    const res = await t.call("POST", "/api/v1/subscribers", { body: { email } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "validation_failed", errors: [{ field: "email", message: "is not a valid email address" }] });
    // The problem never repeats the address.
    expect(res.text).not.toContain(JSON.stringify(email).slice(1, -1));
    const list = await t.call("GET", "/api/v1/subscribers?limit=500");
    expect(list.body.items.map((s: { email: string }) => s.email)).not.toContain(email);
  });

  it.each(REFUSED)("refuses %s as a recipient, sending nothing", async (_what, to) => {
    const before = (await t.call("GET", "/api/v1/emails?limit=500")).body.items.length;
    const res = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: "addr", to } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "validation_failed", errors: [{ field: "to", message: "is not a valid email address" }] });
    expect((await t.call("GET", "/api/v1/emails?limit=500")).body.items).toHaveLength(before);
  });

  it.each(REFUSED)("refuses %s in the services themselves (gRPC, behind the edge)", async (_what, address) => {
    const headers = callHeaders({ tenant: { accountId: t.accountId, mode: "test" }, actor: "test", requestId: "edge-test" });
    const subscribers = createClient(SubscriberService, createServiceTransport(t.platform.serviceUrls.subscribers));
    const deliveryClient = createClient(delivery.DeliveryService, createServiceTransport(t.platform.serviceUrls.delivery));
    await expect(subscribers.createSubscriber({ email: address }, { headers })).rejects.toMatchObject({ code: Code.InvalidArgument });
    await expect(deliveryClient.sendEmail({ templateSlug: "addr", to: address }, { headers })).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it("refuses them in the by-email lookup too", async () => {
    const res = await t.call("GET", `/api/v1/subscribers/by-email/${encodeURIComponent("a..b@example.com")}`);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "email", message: "is not a valid email address" }]);
  });

  it("accepts real-world addresses and stores and sends exactly what was given", async () => {
    for (const email of ["o'brien+news@mail.example.ie", "First.Last@Example.COM", "user@xn--bcher-kva.example", `${"a".repeat(64)}@example.com`]) {
      const created = await t.call("POST", "/api/v1/subscribers", { body: { email } });
      expect({ email, status: created.status, stored: created.body.email }).toEqual({ email, status: 201, stored: email });
      const sent = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: "addr", to: email } });
      expect(sent.body.to).toBe(email);
      const message = await eventually(
        () => t.call("GET", `/api/v1/emails/${sent.body.id}/sandbox`),
        (res) => res.status === 200,
      );
      expect(message.body.to).toBe(email);
    }
  });
});

describe("query parameters and methods (defect 6)", () => {
  it.each(["1e2", "0x10"])("refuses limit=%s: integers are decimal digits", async (limit) => {
    const res = await t.call("GET", `/api/v1/subscribers?limit=${limit}`);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "limit", message: "must be an integer in decimal digits" }]);
  });

  it("refuses an unknown query parameter, naming it", async () => {
    const res = await t.call("GET", "/api/v1/emails?statuss=sent");
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ field: "statuss", message: "is not a known query parameter" }]);
  });

  it("answers an unknown method with 405, Allow and a problem", async () => {
    const res = await t.call("PROPFIND", "/api/v1/subscribers");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST, HEAD, GET");
    expect(res.body.code).toBe("method_not_allowed");
  });
});
