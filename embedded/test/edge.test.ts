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
