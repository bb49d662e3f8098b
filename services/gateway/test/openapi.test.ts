import { createRouterTransport } from "@connectrpc/connect";
import { createLogger } from "@emailsvc/telemetry";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { buildGateway, type Gateway } from "../src/server";
import { createDocumentAjv } from "../src/http/validation";
import { toOpenApiPath } from "../src/routes/define";
import { buildOpenApiDocument, resolveRef, type OpenApiDocument } from "../src/openapi";
import { FakeSubscribers } from "./support/fake-subscribers";
import { responseChecker, startHarness, type Harness } from "./support/harness";

let store: DocumentStore;
let gateway: Gateway;

beforeAll(async () => {
  store = await openStore({ dbName: "gateway" });
  gateway = await buildGateway({
    store,
    services: { subscribers: createRouterTransport(new FakeSubscribers().routes()) },
    logger: createLogger("gateway", "silent"),
  });
});
afterAll(() => store.close());

/** "GET /api/v1/subscribers/{id}" for every operation the router serves. */
function routerOperations(g: Gateway): string[] {
  const out: string[] = [];
  for (const layer of g.router.stack) {
    for (const method of layer.methods) {
      // HEAD is added by the router for every GET; it is not a separate operation.
      if (method === "HEAD") continue;
      out.push(`${method} ${toOpenApiPath(String(layer.path))}`);
    }
  }
  return out.sort();
}

function documentOperations(doc: OpenApiDocument): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) out.push(`${method.toUpperCase()} ${path}`);
  }
  return out.sort();
}

describe("OpenAPI document", () => {
  it("lists exactly the routes the router serves", () => {
    expect(routerOperations(gateway)).toEqual(documentOperations(gateway.openapi));
  });

  it("names every router layer after its operation id", () => {
    for (const layer of gateway.router.stack) {
      const op = Object.values(gateway.openapi.paths[toOpenApiPath(String(layer.path))] ?? {}).find((o) => o?.operationId === layer.name);
      expect(op).toBeDefined();
    }
  });

  it("is served at /api/v1/openapi.json without authentication", async () => {
    const h: Harness = await startHarness();
    try {
      const res = await h.request("GET", "/api/v1/openapi.json", { key: null });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(JSON.parse(JSON.stringify(h.running.gateway.openapi)));
      expect(res.body.openapi).toBe("3.1.0");
    } finally {
      await h.close();
    }
  });

  it("has unique operation ids, a security scheme for each requirement and resolvable references", () => {
    const doc = gateway.openapi;
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op!.operationId));
    expect(new Set(ids).size).toBe(ids.length);

    const text = JSON.stringify(doc);
    for (const [, ref] of text.matchAll(/"\$ref":"([^"]+)"/g)) {
      let node: unknown = doc;
      for (const part of ref!.replace(/^#\//, "").split("/")) node = (node as Record<string, unknown> | undefined)?.[part];
      expect({ ref, found: node !== undefined }).toEqual({ ref, found: true });
    }
    for (const op of Object.values(doc.paths).flatMap((item) => Object.values(item))) {
      for (const requirement of op!.security ?? doc.security) {
        for (const scheme of Object.keys(requirement)) expect(doc.components.securitySchemes[scheme]).toBeDefined();
      }
      // Every operation documents its success and at least the internal error.
      expect(Object.keys(op!.responses).some((s) => s.startsWith("2"))).toBe(true);
    }
    // Path parameters are declared for every {name} in the path.
    for (const [path, item] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const op of Object.values(item)) {
        const declared = (op!.parameters ?? [])
          .map((p) => ("$ref" in (p as object) ? doc.components.parameters[String((p as unknown as { $ref: string }).$ref).split("/").pop()!] : p))
          .filter((p) => p?.in === "path")
          .map((p) => p!.name);
        expect(declared.sort()).toEqual([...names].sort());
      }
    }
  });

  it("compiles every schema with ajv in strict mode", () => {
    const ajv = createDocumentAjv(gateway.openapi, { validateFormats: false });
    for (const name of Object.keys(gateway.openapi.components.schemas)) {
      expect(ajv.getSchema(`openapi.json#/components/schemas/${name}`)).toBeDefined();
    }
  });

  it("announces PUBLIC_API_URL as its server when given", () => {
    expect(buildOpenApiDocument({ serverUrl: "https://api.example.com" }).servers).toEqual([{ url: "https://api.example.com" }]);
    expect(buildOpenApiDocument().servers).toBeUndefined();
  });

  it("documents the send's idempotency: same key and body replay, other body 409, kept at least 24 hours", () => {
    const op = gateway.openapi.paths["/api/v1/emails/send"]!.post!;
    expect(op.description).toMatch(/same key and the same body/);
    expect(op.description).toMatch(/no second email/);
    expect(op.description).toMatch(/Idempotent-Replayed: true/);
    expect(op.description).toMatch(/409 `idempotency_key_reused`/);
    expect(op.description).toMatch(/at least 24 hours/);
    // 403: a member's role may refuse it (the operation takes a session too).
    expect(Object.keys(op.responses).sort()).toEqual(["202", "400", "401", "403", "404", "409", "413", "415", "422", "429", "500", "503", "504"]);
    expect(op.parameters).toEqual([{ $ref: "#/components/parameters/IdempotencyKey" }]);
    expect(gateway.openapi.components.parameters.IdempotencyKey).toMatchObject({ name: "Idempotency-Key", in: "header" });
  });

  it("documents 401, 500, 503 and 504 for every templates and emails operation, and 404 where an id is read", () => {
    for (const [path, item] of Object.entries(gateway.openapi.paths)) {
      if (!/^\/api\/v1\/(templates|emails)/.test(path)) continue;
      for (const op of Object.values(item)) {
        expect({ op: op!.operationId, has: ["401", "500", "503", "504"].every((s) => s in op!.responses) }).toEqual({ op: op!.operationId, has: true });
        if (path.includes("{id}")) expect({ op: op!.operationId, has: "404" in op!.responses }).toEqual({ op: op!.operationId, has: true });
      }
    }
  });

  it("states the body limits: 256 KiB, 1024 KiB for template create and update", () => {
    expect(gateway.openapi.info.description).toMatch(/256 KiB; 1024 KiB for template create and update/);
    expect(gateway.openapi.paths["/api/v1/templates"]!.post!.description).toMatch(/up to 1024 KiB/);
    expect(gateway.openapi.paths["/api/v1/templates/{id}"]!.patch!.description).toMatch(/up to 1024 KiB/);
  });

  it("documents sending a campaign: the states, the counts, pause, cancel, send_at and a missed schedule", () => {
    const doc = gateway.openapi;
    const campaign = doc.components.schemas.Campaign as { properties: Record<string, { description?: string }>; required: string[] };
    const status = campaign.properties.status!.description!;
    for (const state of ["draft", "scheduled", "sending", "paused", "sent", "cancelled", "failed"]) expect(status).toContain(`\`${state}\``);
    expect(status).toMatch(/409 `campaign_state_conflict` whose detail names the current state/);
    expect(campaign.properties.total_recipients!.description).toMatch(/snapshotted when sending started.*null before/);
    expect(campaign.required).toEqual(expect.arrayContaining(["send_at", "started_at", "finished_at", "failure_reason", "template_version", "total_recipients", "counts"]));
    expect((doc.components.schemas.RecipientCounts as { description: string }).description).toMatch(/`pending \+ queued \+ sent \+ failed \+ skipped = total`/);
    const sendAt = (doc.components.schemas.CampaignSend as { properties: { send_at: { description: string } } }).properties.send_at.description;
    expect(sendAt).toMatch(/Now or in the past: it sends at once/);
    expect(sendAt).toMatch(/`schedule_missed`/);
    const send = doc.paths["/api/v1/campaigns/{id}/send"]!.post!;
    expect(send.requestBody).toMatchObject({ required: false });
    expect(doc.paths["/api/v1/campaigns/{id}/pause"]!.post!.description).toMatch(/mail already handed .*finishes/);
    expect(doc.paths["/api/v1/campaigns/{id}/cancel"]!.post!.description).toMatch(/every recipient not yet handed to the email provider is skipped/);
    for (const action of ["send", "pause", "resume", "cancel"]) {
      const op = doc.paths[`/api/v1/campaigns/{id}/${action}`]!.post!;
      expect({ action, statuses: Object.keys(op.responses) }).toEqual({
        action,
        statuses: expect.arrayContaining(["200", "400", "401", "404", "409", "429", "500", "503", "504"]),
      });
    }
  });

  it("says in PATCH /subscribers/{id} that metadata merges and null removes a key", () => {
    const op = gateway.openapi.paths["/api/v1/subscribers/{id}"]!.patch!;
    expect(op.description).toMatch(/merged/i);
    expect(op.description).toMatch(/null is removed/);
  });
});

describe("response checker used by every test", () => {
  const check = responseChecker(buildOpenApiDocument());
  const headers = new Headers({ "x-request-id": "r", "content-type": "application/json" });
  const subscriber = {
    id: "sub_1",
    email: "a@example.com",
    status: "active",
    locale: null,
    metadata: {},
    tags: [],
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
  };
  const respond = (status: number, body: unknown) => ({ status, headers, body, text: JSON.stringify(body) });

  it("accepts a documented response", () => {
    expect(() => check("GET", "/api/v1/subscribers/sub_1", respond(200, subscriber))).not.toThrow();
  });

  it("refuses an extra field, a wrong type, a bad timestamp and an undeclared status", () => {
    expect(() => check("GET", "/api/v1/subscribers/sub_1", respond(200, { ...subscriber, secret: 1 }))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/subscribers/sub_1", respond(200, { ...subscriber, tags: "a" }))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/subscribers/sub_1", respond(200, { ...subscriber, created_at: "yesterday" }))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/subscribers/sub_1", respond(201, subscriber))).toThrow(/not declared/);
  });
});

describe("response checker on templates and emails", () => {
  const check = responseChecker(buildOpenApiDocument());
  const respond = (status: number, body: unknown, extra: Record<string, string> = {}) => ({
    status,
    headers: new Headers({ "x-request-id": "r", "content-type": "application/json", ...extra }),
    body,
    text: JSON.stringify(body),
  });
  const template = {
    id: "tpl_1",
    slug: "welcome",
    name: "Welcome",
    subject: "Hi {{first_name}}",
    mjml_content: "<mjml></mjml>",
    category: "transactional",
    ignore_suppressions: [],
    version: 1,
    variables: ["first_name"],
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
  };
  const email = {
    id: "eml_1",
    status: "queued",
    to: "a@example.com",
    template_id: "tpl_1",
    template_slug: "welcome",
    template_version: 1,
    idempotency_key: null,
    provider: "sandbox",
    message_id: null,
    provider_message_id: null,
    error: null,
    attempts: 0,
    queued_at: "2026-01-01T00:00:00.000Z",
    sent_at: null,
    failed_at: null,
    updated_at: "2026-01-01T00:00:00.000Z",
    bounce: null,
    history: [{ status: "queued", at: "2026-01-01T00:00:00.000Z", detail: "" }],
    next_attempt_at: null,
  };
  const queued = {
    id: "eml_1",
    status: "queued",
    to: "a@example.com",
    template_id: "tpl_1",
    template_slug: "welcome",
    template_version: 1,
    idempotency_key: "k",
    queued_at: "2026-01-01T00:00:00.000Z",
    error: null,
  };

  it("accepts documented templates, and lists without mjml_content only", () => {
    expect(() => check("GET", "/api/v1/templates/tpl_1", respond(200, { ...template, from_email: null, from_name: null, reply_to: null }))).not.toThrow();
    const { mjml_content: _mjml, ...summary } = template;
    expect(() => check("GET", "/api/v1/templates", respond(200, { items: [summary], next_cursor: null }))).not.toThrow();
    expect(() => check("GET", "/api/v1/templates", respond(200, { items: [template], next_cursor: null }))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/templates/tpl_1", respond(200, summary))).toThrow(/does not match/);
  });

  it("refuses a template with an unknown category or version 0", () => {
    expect(() => check("GET", "/api/v1/templates/tpl_1", respond(200, { ...template, category: "newsletter" }))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/templates/tpl_1", respond(200, { ...template, from_email: null, from_name: null, reply_to: null, ignore_suppressions: ["hard_bounce"] }))).not.toThrow();
    expect(() => check("GET", "/api/v1/templates/tpl_1", respond(200, { ...template, ignore_suppressions: ["manual"] }))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/templates/tpl_1", respond(200, { ...template, version: 0 }))).toThrow(/does not match/);
  });

  it("accepts emails with null timestamps and refuses absent or upper-case fields", () => {
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, email))).not.toThrow();
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, { ...email, status: "sent", sent_at: "2026-01-01T00:00:01.000Z" }))).not.toThrow();
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, { ...email, status: "QUEUED" }))).toThrow(/does not match/);
    const bounced = { ...email, status: "bounced", bounce: { type: "hard", diagnostic: "550 5.1.1 <recipient>: unknown" } };
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, bounced))).not.toThrow();
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, { ...bounced, bounce: { type: "permanent", diagnostic: "" } }))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, { ...email, status: "deferred", next_attempt_at: "2026-01-01T00:01:00.000Z" }))).not.toThrow();
    const { sent_at: _sent, ...withoutSentAt } = email;
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, withoutSentAt))).toThrow(/does not match/);
    expect(() => check("GET", "/api/v1/emails/eml_1", respond(200, { ...email, sent_at: "" }))).toThrow(/does not match/);
  });

  it("wants 202 with a Location for a send, a queued status, and Idempotent-Replayed only as `true`", () => {
    const location = { location: "/api/v1/emails/eml_1" };
    expect(() => check("POST", "/api/v1/emails/send", respond(202, queued, location))).not.toThrow();
    expect(() => check("POST", "/api/v1/emails/send", respond(202, queued, { ...location, "idempotent-replayed": "true" }))).not.toThrow();
    expect(() => check("POST", "/api/v1/emails/send", respond(202, queued))).toThrow(/no Location header/);
    expect(() => check("POST", "/api/v1/emails/send", respond(202, queued, { ...location, "idempotent-replayed": "false" }))).toThrow(
      /header Idempotent-Replayed does not match/,
    );
    expect(() => check("POST", "/api/v1/emails/send", respond(202, { ...queued, status: "sent" }, location))).toThrow(/does not match/);
    expect(() => check("POST", "/api/v1/emails/send", respond(200, queued, location))).toThrow(/not declared/);
    expect(() => check("POST", "/api/v1/emails/send", respond(202, email, location))).toThrow(/does not match/);
  });

  it("checks sandbox messages and previews", () => {
    const message = {
      email_id: "eml_1",
      from: "a@example.test",
      to: "b@example.com",
      subject: "s",
      html: "<p>x</p>",
      text: "x",
      headers: { "Message-ID": "<1@example.test>" },
      captured_at: "2026-01-01T00:00:00.000Z",
    };
    expect(() => check("GET", "/api/v1/emails/eml_1/sandbox", respond(200, message))).not.toThrow();
    expect(() => check("GET", "/api/v1/emails/eml_1/sandbox", respond(200, { ...message, headers: { n: 1 } }))).toThrow(/does not match/);
    const preview = { html: "<p>x</p>", subject: "s", text: "x", missing_variables: ["a"] };
    expect(() => check("POST", "/api/v1/templates/tpl_1/preview", respond(200, preview))).not.toThrow();
    expect(() => check("POST", "/api/v1/templates/tpl_1/preview", respond(200, { ...preview, missing_variables: undefined }))).toThrow(
      /does not match/,
    );
  });
});

describe("responses every operation may give", () => {
  const doc = buildOpenApiDocument();
  const operations = Object.values(doc.paths).flatMap((item) => Object.values(item));

  it("documents 400 on every operation (unknown query parameters) and 429 with Retry-After on every operation that takes credentials, and on the one-click link's", () => {
    // Public, and budgeted per client address (RATE_LIMIT_UNSUBSCRIBE_*, RATE_LIMIT_PROVIDER_NOTIFICATIONS) and per link;
    // the members' doors: sign-in (password or passkey), invitations and resets (failed authentication per address, RATE_LIMIT_SIGN_IN_FAILURES, RATE_LIMIT_PASSWORD_RESETS_*).
    const budgetedPublic = new Set(["getUnsubscribePage", "unsubscribeOneClick", "takeSesNotification", "createSession", "createPasskeySignInOptions", "createSessionWithPasskey", "acceptInvitation", "createPasswordReset", "completePasswordReset"]);
    for (const op of operations) {
      expect({ op: op!.operationId, has400: "400" in op!.responses }).toEqual({ op: op!.operationId, has400: true });
      const credentials = (op!.security ?? doc.security).some((r) => Object.keys(r).length > 0);
      expect({ op: op!.operationId, has429: "429" in op!.responses }).toEqual({ op: op!.operationId, has429: credentials || budgetedPublic.has(op!.operationId) });
    }
    const tooMany = doc.components.responses.TooManyRequests as { headers: Record<string, { required?: boolean }> };
    const oneClick = doc.paths["/unsubscribe"]!.post!.responses["429"] as { headers: Record<string, { required?: boolean }> };
    for (const name of ["Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"]) {
      expect({ name, required: tooMany.headers[name]!.required }).toEqual({ name, required: true });
      expect({ name, required: oneClick.headers[name]!.required }).toEqual({ name, required: true });
    }
  });

  it("gives every API-key, session and preference-token operation a rate-limit class (send for the sends, single and batch, privacy for export and erasure, GET read, others write) and none to the others", () => {
    const classes = Object.fromEntries(
      Object.values(doc.paths).flatMap((item) => Object.entries(item).map(([method, op]) => [op!.operationId, { method, cls: op!["x-rate-limit-class"] }])),
    );
    const special: Record<string, string> = { sendEmail: "send", sendEmailBatch: "send", exportPreferenceData: "privacy", deletePreferenceAccount: "privacy" };
    for (const op of operations) {
      const limited = (op!.security ?? doc.security).some((r) => "ApiKey" in r || "Session" in r || "PreferenceToken" in r);
      const { method, cls } = classes[op!.operationId]!;
      const expected = !limited ? undefined : (special[op!.operationId] ?? (method === "get" ? "read" : "write"));
      expect({ op: op!.operationId, cls }).toEqual({ op: op!.operationId, cls: expected });
    }
    expect(classes.sendEmail!.cls).toBe("send");
    expect(classes.previewTemplate!.cls).toBe("write");
    expect(classes.getPreferenceCenter!.cls).toBe("read");
  });

  it("declares the RateLimit headers on every response of an API-key or preference-token operation", () => {
    for (const op of operations) {
      if (!(op!.security ?? doc.security).some((r) => "ApiKey" in r || "PreferenceToken" in r)) continue;
      for (const [status, declared] of Object.entries(op!.responses)) {
        const response = resolveRef<{ headers?: Record<string, unknown> }>(doc, declared as never);
        for (const name of ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"]) {
          expect({ op: op!.operationId, status, name, declared: name in (response.headers ?? {}) }).toEqual({
            op: op!.operationId,
            status,
            name,
            declared: true,
          });
        }
      }
    }
  });

  it("does not change the resources' own operations when it adds them", () => {
    const again = buildOpenApiDocument();
    expect(again).toEqual(doc);
  });
});
