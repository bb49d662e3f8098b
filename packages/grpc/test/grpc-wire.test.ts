// The wire of startGrpcServer is real gRPC: a plain grpc-js client, built from
// the .proto files with no Connect code, gets from our server exactly what it
// gets from a stock connect-node server (responses, metadata, status codes and
// details), compressed requests are accepted, and grpc.health.v1 works,
// including the server-streaming Watch that goes through connect-node's
// generic path. Our transport's streaming calls (delegated to connect-node's
// transport) are checked on Watch too.
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { health } from "@emailsvc/proto";
import {
  bigString,
  createdAt,
  echoRequest,
  grpcJsClients,
  grpcJsUnary,
  newCallId,
  startWorld,
  type GrpcJsClients,
  type GrpcJsResult,
  type World,
} from "./support/grpc-fixtures.js";
import { createServiceTransport } from "../src/transport.js";

/** What each server saw of the last request's encoding (by a server interceptor). */
const seenEncodings: (string | null)[] = [];
const recordEncoding: Interceptor = (next) => async (req) => {
  seenEncodings.push(req.header.get("grpc-encoding"));
  return next(req);
};

let world: World;
let clients: Record<"ours" | "stock", GrpcJsClients>;
let gzipClients: Record<"ours" | "stock", GrpcJsClients>;
beforeAll(async () => {
  world = await startWorld({ serverInterceptors: [recordEncoding] });
  clients = { ours: grpcJsClients(world.ours.url), stock: grpcJsClients(world.stock.url) };
  // 2 = gzip: grpc-js then compresses every request message.
  gzipClients = {
    ours: grpcJsClients(world.ours.url, { "grpc.default_compression_algorithm": 2 }),
    stock: grpcJsClients(world.stock.url, { "grpc.default_compression_algorithm": 2 }),
  };
});
afterAll(async () => {
  for (const c of [clients?.ours, clients?.stock, gzipClients?.ours, gzipClients?.stock]) c?.close();
  await world?.close();
});

/** The parts of a grpc-js result that must not depend on which server answered. */
function comparable<T>(r: GrpcJsResult<T>) {
  const pick = (md: Record<string, unknown> | undefined) =>
    Object.fromEntries(
      Object.entries(md ?? {})
        .filter(([k]) => k.startsWith("x-") || k === "grpc-status-details-bin")
        .map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString("base64") : v]),
    );
  return {
    response: r.response,
    error: r.error && { code: grpc.status[r.error.code], details: r.error.details },
    headers: pick(r.headers),
    status: r.status && { code: grpc.status[r.status.code], details: r.status.details, trailers: pick(r.status.metadata.getMap()) },
  };
}

describe("a grpc-js client", () => {
  it("gets the same response, headers and trailers from our server as from a stock connect-node server", async () => {
    const request = { ...echoRequest, status: "SUBSCRIBER_STATUS_BOUNCED", metadata: undefined };
    const results = {
      ours: await grpcJsUnary<any>(clients.ours.subscribers, "CreateSubscriber", request),
      stock: await grpcJsUnary<any>(clients.stock.subscribers, "CreateSubscriber", request),
    };
    const ours = comparable(results.ours);
    expect(ours.error).toBeUndefined();
    expect(ours.response.subscriber).toMatchObject({
      id: "sub_echo",
      email: echoRequest.email,
      status: "SUBSCRIBER_STATUS_BOUNCED",
      tags: echoRequest.tags,
      created_at: { seconds: String(createdAt.seconds), nanos: createdAt.nanos },
      updated_at: { nanos: 456_789_012 },
    });
    expect(ours.headers).toMatchObject({ "x-handler-header": "h1", "x-multi": "a, b" });
    expect(ours.status).toMatchObject({ code: "OK", trailers: { "x-handler-trailer": "t1" } });
    expect(ours).toEqual(comparable(results.stock));
  });

  it("sends a Struct and a 100 KB string, and gets them back as from a stock server", async () => {
    // proto-loader's Struct: { fields: { key: { kind, <kind>: value } } }.
    const request = {
      email: "struct@example.com",
      metadata: {
        fields: {
          plan: { stringValue: "pro" },
          seats: { numberValue: 42 },
          big: { stringValue: bigString },
          nested: { structValue: { fields: { ok: { boolValue: true } } } },
        },
      },
    };
    const ours = comparable(await grpcJsUnary<any>(clients.ours.subscribers, "CreateSubscriber", request));
    expect(ours.response.subscriber.metadata.fields).toMatchObject({
      plan: { stringValue: "pro" },
      seats: { numberValue: 42 },
      big: { stringValue: bigString },
      nested: { structValue: { fields: { ok: { boolValue: true } } } },
      signalAbortedDuringCall: { boolValue: false },
    });
    expect(ours).toEqual(comparable(await grpcJsUnary<any>(clients.stock.subscribers, "CreateSubscriber", request)));
  });

  it.each([
    ["connect-error", "NOT_FOUND", "subscriber sub_404 not found"],
    ["unauthenticated", "UNAUTHENTICATED", "missing tenant"],
    ["crash", "INTERNAL", "internal error"],
  ])("gets the same status as from a stock server: %s → %s", async (id, code, details) => {
    const ours = comparable(await grpcJsUnary(clients.ours.subscribers, "GetSubscriber", { id }));
    expect(ours.error).toEqual({ code, details });
    expect(ours).toEqual(comparable(await grpcJsUnary(clients.stock.subscribers, "GetSubscriber", { id })));
  });

  it("gets error details (grpc-status-details-bin) and error metadata byte for byte as from a stock server", async () => {
    const ours = comparable(await grpcJsUnary(clients.ours.subscribers, "GetSubscriber", { id: "connect-error" }));
    expect(ours.status?.trailers).toEqual({ "x-error-meta": "m1", "grpc-status-details-bin": expect.any(String) });
    expect(ours.status?.trailers).toEqual(comparable(await grpcJsUnary(clients.stock.subscribers, "GetSubscriber", { id: "connect-error" })).status?.trailers);
  });

  it("gets UNIMPLEMENTED for a method the implementation leaves out and for a service the server does not register", async () => {
    const method = comparable(await grpcJsUnary(clients.ours.subscribers, "DeleteSubscriber", { id: "x" }));
    expect(method.error).toEqual({ code: "UNIMPLEMENTED", details: "emailsvc.subscribers.v1.SubscriberService.DeleteSubscriber is not implemented" });
    expect(method).toEqual(comparable(await grpcJsUnary(clients.stock.subscribers, "DeleteSubscriber", { id: "x" })));

    const service = comparable(await grpcJsUnary(clients.ours.tags, "GetTag", { id: "x" }));
    expect(service.error?.code).toBe("UNIMPLEMENTED");
    expect(service).toEqual(comparable(await grpcJsUnary(clients.stock.tags, "GetTag", { id: "x" })));
  });

  it("has a gzip-compressed request accepted (it takes connect-node's generic path on our server)", async () => {
    const request = { email: "gzip@example.com", tags: [bigString] };
    seenEncodings.length = 0;
    const ours = comparable(await grpcJsUnary<any>(gzipClients.ours.subscribers, "CreateSubscriber", request));
    expect(seenEncodings).toEqual(["gzip"]);
    expect(ours.error).toBeUndefined();
    expect(ours.response.subscriber).toMatchObject({ email: "gzip@example.com", tags: [bigString] });
    expect(ours).toEqual(comparable(await grpcJsUnary<any>(gzipClients.stock.subscribers, "CreateSubscriber", request)));
  });

  it("gets DEADLINE_EXCEEDED for a deadline shorter than the handler, whose ctx.signal aborts", async () => {
    const id = newCallId("grpcjs-deadline");
    const metadata = new grpc.Metadata();
    metadata.set("x-call-id", id);
    const result = await grpcJsUnary(clients.ours.subscribers, "GetSubscriber", { id: "sleep-ignoring-signal:500" }, metadata, {
      deadline: Date.now() + 50,
    });
    expect(result.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const record = await world.log.waitAborted(id);
    // The server's own deadline, or grpc-js's RST_STREAM CANCEL, whichever came first.
    expect(["DeadlineExceeded", "Canceled"]).toContain(Code[ConnectError.from(record.abortReason).code]);
    await world.log.waitEnded(id);
  });

  it("cancels a call: CANCELLED on the client, ctx.signal aborts with Canceled on our server", async () => {
    const id = newCallId("grpcjs-cancel");
    const metadata = new grpc.Metadata();
    metadata.set("x-call-id", id);
    const result = new Promise<grpc.ServiceError | null>((resolve) => {
      const call = clients.ours.subscribers.GetSubscriber({ id: "sleep:5000" }, metadata, (err: grpc.ServiceError | null) => resolve(err));
      void world.log.waitStarted(id).then(() => call.cancel());
    });
    expect((await result)?.code).toBe(grpc.status.CANCELLED);
    const record = await world.log.waitAborted(id);
    expect(Code[ConnectError.from(record.abortReason).code]).toBe("Canceled");
    await world.log.waitEnded(id);
  });
});

describe("grpc.health.v1", () => {
  it("Check answers SERVING, and SERVICE_UNKNOWN for an unknown service (grpc-js)", async () => {
    for (const server of ["ours", "stock"] as const) {
      const h = clients[server].health;
      expect((await grpcJsUnary<any>(h, "Check", { service: "" })).response).toEqual({ status: "SERVING" });
      expect((await grpcJsUnary<any>(h, "Check", { service: "emailsvc.subscribers.v1.SubscriberService" })).response).toEqual({ status: "SERVING" });
      expect((await grpcJsUnary<any>(h, "Check", { service: "no.such.Service" })).response).toEqual({ status: "SERVICE_UNKNOWN" });
    }
  });

  it("Watch streams a first message to grpc-js, and ends on cancel", async () => {
    const first = await new Promise<unknown>((resolve, reject) => {
      const call: grpc.ClientReadableStream<unknown> = clients.ours.health.Watch({ service: "" });
      call.once("data", (message: unknown) => {
        call.cancel();
        resolve(message);
      });
      call.on("error", (err: grpc.ServiceError) => {
        if (err.code !== grpc.status.CANCELLED) reject(err);
      });
    });
    expect(first).toEqual({ status: "SERVING" });
  });

  it.each(["our transport", "stock transport"] as const)("%s → our server: Check (unary fast path) and Watch (streaming, generic path)", async (kind) => {
    const transport = kind === "our transport" ? createServiceTransport(world.ours.url) : createGrpcTransport({ baseUrl: world.ours.url });
    const client = createClient(health.Health, transport);
    expect((await client.check({ service: "" })).status).toBe(health.HealthCheckResponse_ServingStatus.SERVING);

    const controller = new AbortController();
    const statuses: health.HealthCheckResponse_ServingStatus[] = [];
    try {
      for await (const message of client.watch({ service: "" }, { signal: controller.signal })) {
        statuses.push(message.status);
        controller.abort();
      }
    } catch (err) {
      expect(ConnectError.from(err).code).toBe(Code.Canceled);
    }
    expect(statuses).toEqual([health.HealthCheckResponse_ServingStatus.SERVING]);
  });
});
