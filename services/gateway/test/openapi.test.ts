import { createRouterTransport } from "@connectrpc/connect";
import { createLogger } from "@emailsvc/runtime";
import { openStore, type DocumentStore } from "@emailsvc/storage";
import { buildGateway, type Gateway } from "../src/server";
import { createDocumentAjv } from "../src/http/validation";
import { toOpenApiPath } from "../src/routes/define";
import { buildOpenApiDocument, type OpenApiDocument } from "../src/openapi";
import { FakeSubscribers } from "./support/fake-subscribers";
import { responseChecker, startHarness, type Harness } from "./support/harness";

let store: DocumentStore;
let gateway: Gateway;

beforeAll(async () => {
  store = await openStore({ dbName: "gateway" });
  gateway = await buildGateway({
    store,
    subscribersTransport: createRouterTransport(new FakeSubscribers().routes()),
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
