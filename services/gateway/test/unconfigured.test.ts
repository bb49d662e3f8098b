import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// The templates and delivery services are optional for now: a gateway started
// without them still serves everything else, and their routes answer a
// documented 503 `service_unavailable` (after authentication and validation).
// Readiness asks every configured service, and only those.

import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { createLogger } from "@emailsvc/telemetry";
import { openStore } from "@emailsvc/storage";
import { loadConfig } from "../src/config";
import { buildGateway } from "../src/server";
import { FakeSubscribers } from "./support/fake-subscribers";
import { startHarness, type Harness } from "./support/harness";

describe("without the templates and delivery services", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ without: ["templates", "delivery"] });
  });
  afterAll(() => h.close());

  const MJML = "<mjml></mjml>";
  it.each([
    ["POST", "/api/v1/templates", { name: "n", subject: "s", mjml_content: MJML, category: "marketing" }, "templates"],
    ["GET", "/api/v1/templates", undefined, "templates"],
    ["GET", "/api/v1/templates/tpl_1", undefined, "templates"],
    ["PATCH", "/api/v1/templates/tpl_1", { name: "n" }, "templates"],
    ["DELETE", "/api/v1/templates/tpl_1", undefined, "templates"],
    ["POST", "/api/v1/templates/tpl_1/preview", { variables: {} }, "templates"],
    ["POST", "/api/v1/emails/send", { template_slug: "welcome", to: "a@example.com" }, "delivery"],
    ["GET", "/api/v1/emails", undefined, "delivery"],
    ["GET", "/api/v1/emails/eml_1", undefined, "delivery"],
    ["GET", "/api/v1/emails/eml_1/sandbox", undefined, "delivery"],
  ])("%s %s answers 503 service_unavailable", async (method, path, body, service) => {
    const res = await h.request(method, path, body === undefined ? {} : { body });
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.body).toMatchObject({
      code: "service_unavailable",
      title: "Service not available",
      detail: `This gateway is not connected to the ${service} service; retry later.`,
    });
  });

  it("still authenticates first", async () => {
    const res = await h.request("GET", "/api/v1/emails/eml_1", { key: null });
    expect(res.status).toBe(401);
  });

  it("still refuses bad input with 400", async () => {
    const res = await h.request("POST", "/api/v1/emails/send", { body: { to: "a@example.com", variables: [] } });
    expect(res.status).toBe(400);
  });

  it("does not log the 503 as an error, and warned once at start", async () => {
    await h.request("GET", "/api/v1/templates");
    expect(h.logs.filter((l) => l.msg === "request failed")).toEqual([]);
    expect(h.logs.filter((l) => /no (templates|delivery) service configured/.test(l.msg))).toHaveLength(2);
  });

  it("serves subscribers and tags as before", async () => {
    expect((await h.request("POST", "/api/v1/tags", { body: { name: "still-here" } })).status).toBe(201);
  });

  it("is ready: only configured services count", async () => {
    expect((await h.request("GET", "/readyz", { key: null })).status).toBe(200);
  });
});

describe("readiness with every service configured", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it("is 200 when every service is serving", async () => {
    expect((await h.request("GET", "/readyz", { key: null })).status).toBe(200);
  });

  it.each(["templates", "delivery"] as const)("is 503 when the %s service is not serving, and logs which", async (name) => {
    h[name].serving = false;
    try {
      const res = await h.request("GET", "/readyz", { key: null });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe("not_ready");
      expect(h.logs.filter((l) => l.msg === "not ready").at(-1)).toMatchObject({ store: true, subscribers: true, [name]: false });
    } finally {
      h[name].serving = true;
    }
    expect((await h.request("GET", "/readyz", { key: null })).status).toBe(200);
  });
});

describe("service errors of the new services", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it("hides a transport failure of the delivery service behind a generic 503", async () => {
    h.delivery.failNext = new ConnectError("connect ECONNREFUSED 10.0.0.9:50053", Code.Unavailable);
    const res = await h.request("GET", "/api/v1/emails");
    expect(res.status).toBe(503);
    expect(res.body.code).toBe("unavailable");
    expect(res.text).not.toContain("ECONNREFUSED");
  });

  it("answers an unexpected templates failure with a generic 500, logged with the request id", async () => {
    h.templates.failNext = new Error("secret internals");
    const res = await h.request("GET", "/api/v1/templates", { headers: { "x-request-id": "tpl-boom" } });
    expect(res.status).toBe(500);
    expect(res.text).not.toContain("secret");
    expect(h.logs.some((l) => l.msg === "request failed" && l.request_id === "tpl-boom")).toBe(true);
  });

  it("a deadline of the templates service is 504", async () => {
    h.templates.failNext = new ConnectError("deadline", Code.DeadlineExceeded);
    expect((await h.request("GET", "/api/v1/templates/tpl_1")).status).toBe(504);
  });
});

describe("configuration", () => {
  it("refuses to start without the subscribers service", async () => {
    const store = await openStore({ dbName: "gateway" });
    try {
      const templates = createRouterTransport(new FakeSubscribers().routes());
      const logger = createLogger("gateway", "silent");
      await expect(buildGateway({ store, logger, services: { templates } })).rejects.toThrow(/SUBSCRIBERS_URL/);
    } finally {
      await store.close();
    }
  });

  it("reads TEMPLATES_URL and DELIVERY_URL, both optional", () => {
    const saved = { ...process.env };
    try {
      process.env.SUBSCRIBERS_URL = "http://subscribers:50051";
      process.env.TOKEN_SIGNING_KEYS = `k1:${Buffer.alloc(32, 1).toString("base64")}`;
      delete process.env.TEMPLATES_URL;
      delete process.env.DELIVERY_URL;
      expect(loadConfig().serviceUrls).toEqual({ subscribers: "http://subscribers:50051" });
      process.env.TEMPLATES_URL = "http://templates:50052";
      process.env.DELIVERY_URL = "http://delivery:50053";
      expect(loadConfig().serviceUrls).toEqual({
        subscribers: "http://subscribers:50051",
        templates: "http://templates:50052",
        delivery: "http://delivery:50053",
      });
      delete process.env.SUBSCRIBERS_URL;
      expect(() => loadConfig()).toThrow(/SUBSCRIBERS_URL/);
    } finally {
      process.env = saved;
    }
  });

  it("requires TOKEN_SIGNING_KEYS on MongoDB, and keeps a development key under DATA_DIR on the embedded store", () => {
    const saved = { ...process.env };
    const dir = mkdtempSync(join(tmpdir(), "gateway-keys-"));
    try {
      process.env.SUBSCRIBERS_URL = "http://subscribers:50051";
      delete process.env.TOKEN_SIGNING_KEYS;
      process.env.MONGO_URL = "mongodb://mongo:27017";
      expect(() => loadConfig()).toThrow(/TOKEN_SIGNING_KEYS is required/);
      process.env.TOKEN_SIGNING_KEYS = "k1:short";
      expect(() => loadConfig()).toThrow(/TOKEN_SIGNING_KEYS: key "k1" is \d+ bytes/);
      delete process.env.TOKEN_SIGNING_KEYS;
      delete process.env.MONGO_URL;
      process.env.DATA_DIR = dir;
      expect(loadConfig().tokenKeys.current.id).toBe("dev");
    } finally {
      process.env = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
