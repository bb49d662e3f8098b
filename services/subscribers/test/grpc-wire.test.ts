import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { newId } from "@emailsvc/ids";
import { startHarness, type Harness } from "./harness.js";

// Proves the internal wire is real gRPC over HTTP/2: a plain grpc-js client,
// built from the .proto files with no Connect code, calls the service.
const protoRoot = join(__dirname, "..", "..", "..", "proto");

function loadClients(url: string) {
  const definition = protoLoader.loadSync(
    ["emailsvc/subscribers/v1/subscribers.proto", "emailsvc/subscribers/v1/audience.proto", "grpc/health/v1/health.proto"],
    { includeDirs: [protoRoot], keepCase: true, longs: String, enums: String, defaults: true },
  );
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const address = url.replace(/^http:\/\//, "");
  return {
    subscribers: new pkg.emailsvc.subscribers.v1.SubscriberService(address, grpc.credentials.createInsecure()),
    audience: new pkg.emailsvc.subscribers.v1.AudienceService(address, grpc.credentials.createInsecure()),
    health: new pkg.grpc.health.v1.Health(address, grpc.credentials.createInsecure()),
  };
}

function unary<T>(client: any, method: string, request: object, metadata = new grpc.Metadata()): Promise<T> {
  return new Promise((resolve, reject) => client[method](request, metadata, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))));
}

describe("the subscribers service speaks plain gRPC", () => {
  let h: Harness;
  let clients: ReturnType<typeof loadClients>;
  beforeAll(async () => {
    h = await startHarness("embedded");
    clients = loadClients(h.service.url);
  });
  afterAll(async () => {
    clients?.subscribers.close();
    clients?.audience.close();
    clients?.health.close();
    await h?.close();
  });

  it("answers grpc.health.v1 Check with SERVING", async () => {
    const res = await unary<{ status: string }>(clients.health, "Check", { service: "" });
    expect(res.status).toBe("SERVING");
    const known = await unary<{ status: string }>(clients.health, "Check", { service: "emailsvc.subscribers.v1.SubscriberService" });
    expect(known.status).toBe("SERVING");
    await expect(unary(clients.health, "Check", { service: "no.such.Service" })).resolves.toEqual({ status: "SERVICE_UNKNOWN" });
    const audience = await unary<{ status: string }>(clients.health, "Check", { service: "emailsvc.subscribers.v1.AudienceService" });
    expect(audience.status).toBe("SERVING");
  });

  it("counts and lists an audience with a metadata filter built from the .proto alone", async () => {
    const md = new grpc.Metadata();
    md.set("x-account-id", newId("acc"));
    md.set("x-key-mode", "test");
    const created = await unary<any>(clients.subscribers, "CreateSubscriber", { email: "aud@example.com", tags: ["wire"], metadata: { fields: { plan: { stringValue: "pro" } } } }, md);
    const filter = {
      include_tags: ["WIRE"],
      match: "MATCH_ALL",
      metadata: [{ key: "plan", in: { values: [{ stringValue: "pro" }, { numberValue: 2 }] } }, { key: "gone", exists: false }],
    };
    await expect(unary(clients.audience, "CountAudience", { filter }, md)).resolves.toEqual({ count: "1" });
    await expect(unary(clients.audience, "ListAudience", { filter, limit: 10 }, md)).resolves.toEqual({
      subscriber_ids: [created.subscriber.id],
      next_after: "",
    });
  });

  it("creates and reads a subscriber, with the tenant in gRPC metadata", async () => {
    const md = new grpc.Metadata();
    md.set("x-account-id", newId("acc"));
    md.set("x-key-mode", "test");
    md.set("x-actor", "api_key:key_grpcjs");
    const created = await unary<any>(clients.subscribers, "CreateSubscriber", { email: "wire@example.com", tags: ["grpc"] }, md);
    expect(created.subscriber.email).toBe("wire@example.com");
    expect(created.subscriber.status).toBe("SUBSCRIBER_STATUS_ACTIVE");
    const got = await unary<any>(clients.subscribers, "GetSubscriber", { id: created.subscriber.id }, md);
    expect(got.subscriber.tags).toEqual(["grpc"]);
  });

  it("returns gRPC status codes: NOT_FOUND, UNAUTHENTICATED without a tenant", async () => {
    const md = new grpc.Metadata();
    md.set("x-account-id", newId("acc"));
    md.set("x-key-mode", "live");
    await expect(unary(clients.subscribers, "GetSubscriber", { id: newId("sub") }, md)).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    await expect(unary(clients.subscribers, "GetSubscriber", { id: newId("sub") })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });
});
