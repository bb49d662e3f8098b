// Starts a gateway on port 0 over fakes of the subscribers, templates,
// delivery and campaigns services and an in-memory embedded store, with one account and one
// test key. Every response that goes through `request` is checked against the
// OpenAPI document: its status must be declared for the operation, its
// declared headers present and valid, and its body must match the declared
// schema (formats asserted), so every test also tests the document.

import addFormats from "ajv-formats";
import { createRouterTransport } from "@connectrpc/connect";
import { errorInterceptor } from "@emailsvc/errors";
import { type Logger } from "@emailsvc/telemetry";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { memoryLogger as kitMemoryLogger } from "@emailsvc/testing";
import { startGateway, type RunningGateway, type StartGatewayOptions } from "../../src/server";
import { loadRateLimitConfig } from "../../src/ratelimit/config";
import { createDocumentAjv, rebaseSchema } from "../../src/http/validation";
import { resolveRef, type OpenApiDocument, type OperationObject } from "../../src/openapi";
import { FakeCampaigns } from "./fake-campaigns";
import { FakeDelivery } from "./fake-delivery";
import { FakePortal } from "./fake-portal";
import { FakeSubscribers } from "./fake-subscribers";
import { FakeTemplates } from "./fake-templates";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/**
 * Rate limits far above what any test sends, set explicitly (as environment,
 * for the embedded platform's tests too): tests of other features, and
 * schemathesis with its thousands of requests from one key and address, never
 * meet them, yet the limits stay on, so every response carries the RateLimit
 * headers and is checked against the document. rate-limit.test.ts sets small ones.
 */
export const GENEROUS_RATE_LIMIT_ENV: Readonly<Record<string, string>> = {
  RATE_LIMIT_READ: "1000000/1s",
  RATE_LIMIT_WRITE: "1000000/1s",
  RATE_LIMIT_SEND: "1000000/1s",
  RATE_LIMIT_TENANT_READ: "1000000/1s",
  RATE_LIMIT_TENANT_WRITE: "1000000/1s",
  RATE_LIMIT_TENANT_SEND: "1000000/1s",
  RATE_LIMIT_AUTH_FAILURES: "1000000/1s",
  RATE_LIMIT_SIGN_IN_FAILURES: "1000000/1s",
  RATE_LIMIT_PASSWORD_RESETS_ADDRESS: "1000000/1s",
  RATE_LIMIT_PASSWORD_RESETS_EMAIL: "1000000/1s",
  RATE_LIMIT_PREFERENCE_READ: "1000000/1s",
  RATE_LIMIT_PREFERENCE_WRITE: "1000000/1s",
  RATE_LIMIT_PREFERENCE_PRIVACY: "1000000/1s",
  RATE_LIMIT_TENANT_PREFERENCE_READ: "1000000/1s",
  RATE_LIMIT_TENANT_PREFERENCE_WRITE: "1000000/1s",
  RATE_LIMIT_TENANT_PREFERENCE_PRIVACY: "1000000/1s",
};
export const GENEROUS_RATE_LIMITS = loadRateLimitConfig(GENEROUS_RATE_LIMIT_ENV);

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (no JSON encoding, no content type unless given). */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** API key to send; `null` sends none. Default: the harness's test key. */
  key?: string | null;
  /** Send the admin token (or this one). */
  admin?: boolean | string;
}

export interface Harness {
  url: string;
  running: RunningGateway;
  store: DocumentStore;
  fake: FakeSubscribers;
  templates: FakeTemplates;
  delivery: FakeDelivery;
  campaigns: FakeCampaigns;
  portal: FakePortal;
  accountId: string;
  key: string;
  keyId: string;
  logs: Array<Record<string, any>>;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

/** A pino logger that keeps its lines for assertions (the testing kit's, as the gateway names itself). */
export const memoryLogger = () => kitMemoryLogger("gateway");

export interface HarnessOptions extends Partial<StartGatewayOptions> {
  store?: DocumentStore;
  /** Services the gateway is started without (their routes answer 503). */
  without?: Array<"templates" | "delivery" | "campaigns">;
  /** A fake portal (PreferenceCenterService) behind the preference-center routes; without it they answer 503. */
  portal?: boolean;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const { without = [], portal: withPortal = false, ...gatewayOptions } = options;
  const store = options.store ?? (await openStore({ dbName: "gateway" }));
  const fake = new FakeSubscribers();
  const templates = new FakeTemplates();
  const delivery = new FakeDelivery(templates);
  const campaigns = new FakeCampaigns();
  const portal = new FakePortal();
  const { logger, logs } = memoryLogger();
  const serve = (routes: Parameters<typeof createRouterTransport>[0]) =>
    createRouterTransport(routes, { router: { interceptors: [errorInterceptor(logger)] } });
  const running = await startGateway({
    port: 0,
    adminToken: ADMIN_TOKEN,
    rateLimit: GENEROUS_RATE_LIMITS,
    ...gatewayOptions,
    store,
    services: {
      subscribers: serve(fake.routes()),
      ...(without.includes("templates") ? {} : { templates: serve(templates.routes()) }),
      ...(without.includes("delivery") ? {} : { delivery: serve(delivery.routes()) }),
      ...(without.includes("campaigns") ? {} : { campaigns: serve(campaigns.routes()) }),
      ...(withPortal ? { portal: serve(portal.routes()) } : {}),
    },
    logger,
  });
  const account = await running.gateway.accounts.createAccount({ name: "Test", plan: "starter" });
  const created = await running.gateway.accounts.createApiKey(account.id, { mode: "test" });
  const checker = responseChecker(running.gateway.openapi);

  const request = async (method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = {};
    const key = opts.key === undefined ? (opts.admin ? null : created.key) : opts.key;
    if (key) headers["x-api-key"] = key;
    if (opts.admin) headers.authorization = `Bearer ${opts.admin === true ? ADMIN_TOKEN : opts.admin}`;
    let body: string | Buffer | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    Object.assign(headers, opts.headers);
    return sendChecked(checker, running.url, method, path, { headers, body });
  };

  return {
    url: running.url,
    running,
    store,
    fake,
    templates,
    delivery,
    campaigns,
    portal,
    accountId: account.id,
    key: created.key,
    keyId: created.id,
    logs,
    request,
    close: async () => {
      await running.close();
      if (!options.store) await store.close();
    },
  };
}

/**
 * Checks a response against the document: the operation matching the method
 * and path must declare the status, the content type must be the declared one,
 * and the body must validate. Responses of unknown routes must be problems.
 */
export type ResponseCheck = (method: string, path: string, res: TestResponse) => void;

/** Sends one request to `baseUrl + path`, parses a JSON answer, and checks it against the OpenAPI document. */
export async function sendChecked(
  check: ResponseCheck,
  baseUrl: string,
  method: string,
  path: string,
  init: { headers: Record<string, string>; body?: string | Buffer | undefined },
): Promise<TestResponse> {
  const res = await fetch(baseUrl + path, { method, headers: init.headers, body: init.body });
  const text = await res.text();
  const parsed = text && (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text;
  const response = { status: res.status, headers: res.headers, body: parsed, text };
  check(method, path, response);
  return response;
}

export function responseChecker(doc: OpenApiDocument): ResponseCheck {
  const ajv = createDocumentAjv(doc, { validateFormats: true });
  addFormats(ajv);
  const routes = Object.entries(doc.paths).map(([template, item]) => ({
    regex: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    template,
    item,
  }));
  const problem = ajv.getSchema("openapi.json#/components/schemas/Problem")!;

  return (method, path, res) => {
    const where = `${method} ${path} -> ${res.status}`;
    if (!res.headers.get("x-request-id")) throw new Error(`${where}: no X-Request-Id header`);
    const pathname = path.split("?")[0]!;
    // by-email before {id}, as the router does.
    const candidates = routes.filter((r) => r.regex.test(pathname)).sort((a, b) => literalLength(b.template) - literalLength(a.template));
    const route = candidates.find((r) => (r.item as Record<string, unknown>)[method.toLowerCase()]);
    const operation = route ? ((route.item as Record<string, unknown>)[method.toLowerCase()] as OperationObject) : undefined;

    if (method === "OPTIONS") {
      // Answered for every known path: the methods it serves, no body.
      if (res.status !== 204 || !res.headers.get("allow")) throw new Error(`${where}: OPTIONS without 204 and Allow`);
      return;
    }
    if (!operation || res.status === 405) {
      // Unknown route or method: a problem, not a documented operation.
      if (res.status !== 404 && res.status !== 405) throw new Error(`${where}: undocumented route answered`);
      if (!problem(res.body)) throw new Error(`${where}: ${ajv.errorsText(problem.errors)}`);
      return;
    }
    const declared = operation.responses[String(res.status)];
    if (!declared) throw new Error(`${where}: status not declared for ${operation.operationId}`);
    const response = resolveRef<{
      headers?: Record<string, unknown>;
      content?: Record<string, { schema: Record<string, unknown> }>;
    }>(doc, declared as never);
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const { required, schema } = resolveRef<{ required?: boolean; schema: Record<string, unknown> }>(doc, header as never);
      const value = res.headers.get(name);
      if (value === null) {
        if (required) throw new Error(`${where}: no ${name} header, declared as required`);
        continue;
      }
      const validate = ajv.compile(rebaseSchema(schema));
      if (!validate(value)) throw new Error(`${where}: header ${name} does not match the document: ${ajv.errorsText(validate.errors)}`);
    }
    if (!response.content) {
      if (res.text !== "") throw new Error(`${where}: body on a response declared without content`);
      return;
    }
    // One of the declared media types (a page or a problem, say); its schema checks the body.
    const got = res.headers.get("content-type") ?? "";
    const declaredTypes = Object.entries(response.content);
    const match = declaredTypes.find(([type]) => got.startsWith(type));
    if (!match) throw new Error(`${where}: content type ${got}, declared ${declaredTypes.map(([type]) => type).join(" or ")}`);
    const [, media] = match;
    const validate = ajv.compile(rebaseSchema(media.schema));
    if (!validate(res.body)) throw new Error(`${where}: body does not match the document: ${ajv.errorsText(validate.errors)}`);
  };
}

function literalLength(template: string): number {
  return template.replace(/\{[^}]+\}/g, "").length;
}
