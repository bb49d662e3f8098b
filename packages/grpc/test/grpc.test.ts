// The unary fast paths of the runtime kit's gRPC server (startGrpcServer) and
// client transport (createServiceTransport) behave exactly like stock
// connect-node. Every case runs on three pairs, each with at least one fast
// path facing a stock other side (or the other fast path):
//   our transport → our server, stock transport → our server, our transport → stock server
// and compares what arrives with the reference pair, stock transport → stock
// server (whose result is also checked against explicit expectations, so that
// a case cannot pass by everything being equally wrong).
import { getEventListeners } from "node:events";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createContextKey, createContextValues, encodeBinaryHeader, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CreateSubscriberResponseSchema, ErrorDetailSchema, GetSubscriberRequestSchema, SubscriberService, TagService, health } from "@emailsvc/proto";
import { startGrpcServer } from "../src/server.js";
import { createServiceTransport } from "../src/transport.js";
import {
  CallLog,
  customHeaders,
  echoRequest,
  errorDetail,
  expectedEcho,
  envelope,
  grpcStatusOf,
  newCallId,
  pairNames,
  serverContextKey,
  rawCall,
  rejectionOf,
  startWorld,
  subscriberImpl,
  waitFor,
  type PairName,
  type World,
} from "./support/grpc-fixtures.js";

const REF: PairName = "stock transport → stock server";

describe("unary calls: the fast paths against stock connect-node", () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(async () => {
    await world?.close();
  });

  async function echo(pair: PairName) {
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const res = await world.client(pair).createSubscriber(echoRequest, {
      onHeader: (h) => (header = h),
      onTrailer: (t) => (trailer = t),
    });
    return { res, header, trailer };
  }

  describe("success", () => {
    it("the reference pair echoes the request (sanity check of the expectations)", async () => {
      const { res } = await echo(REF);
      expect(res.subscriber).toEqual(expect.objectContaining(expectedEcho()));
    });

    it.each(pairNames)("%s: request and response messages arrive intact (Struct, timestamps, repeated fields, 100 KB string)", async (pair) => {
      const { res } = await echo(pair);
      expect(res.subscriber).toEqual(expect.objectContaining(expectedEcho()));
      // Byte for byte what the reference pair delivers.
      const ref = await echo(REF);
      expect(Buffer.from(toBinary(CreateSubscriberResponseSchema, res))).toEqual(Buffer.from(toBinary(CreateSubscriberResponseSchema, ref.res)));
    });

    it.each(pairNames)("%s: response headers and trailers set by the handler arrive", async (pair) => {
      const observe = ({ header, trailer }: Awaited<ReturnType<typeof echo>>) => ({
        header: customHeaders(header),
        setCookie: header?.getSetCookie(),
        trailer: customHeaders(trailer),
      });
      const ref = observe(await echo(REF));
      expect(ref).toEqual({
        header: { "x-handler-header": "h1", "x-multi": "a, b", "x-data-bin": encodeBinaryHeader(new Uint8Array([0, 1, 2, 250, 255])) },
        setCookie: ["c1=1", "c2=2"],
        trailer: { "x-handler-trailer": "t1", "x-trailer-bin": encodeBinaryHeader(new Uint8Array([9, 8, 7])) },
      });
      expect(observe(await echo(pair))).toEqual(ref);
    });

    it.each(pairNames)("%s: many concurrent calls on one connection each get their own response", async (pair) => {
      const client = world.client(pair);
      const ids = Array.from({ length: 50 }, (_, i) => `e${i}@example.com`);
      const results = await Promise.all(ids.map((email) => client.createSubscriber({ email, tags: [email] })));
      expect(results.map((r) => [r.subscriber?.email, r.subscriber?.tags])).toEqual(ids.map((email) => [email, [email]]));
    });
  });

  describe("resources", () => {
    // Timers that keep the process alive (unref'd ones, like the connection's keepalive, are not listed).
    const activeTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

    it.each(pairNames)("%s: nothing outlives a call: no listener on the caller's signal, no deadline timer", async (pair) => {
      const client = world.client(pair);
      await client.getSubscriber({ id: "known" }); // connected
      const timersBefore = activeTimers();
      const controller = new AbortController();
      for (let i = 0; i < 10; i++) {
        await client.getSubscriber({ id: "known" }, { signal: controller.signal, timeoutMs: 60_000 });
        await rejectionOf(client.getSubscriber({ id: "connect-error" }, { signal: controller.signal, timeoutMs: 60_000 }));
      }
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
      // Polled: a server may clear its own deadline timer a moment after the
      // client has the answer (connect-node's does, once it finished writing).
      await waitFor(`at most ${timersBefore} active timers (now ${activeTimers()})`, () => activeTimers() <= timersBefore);
    });
  });

  describe("errors", () => {
    async function errorOf(pair: PairName, id: string) {
      const err = await rejectionOf(world.client(pair).getSubscriber({ id }));
      return {
        code: Code[err.code],
        rawMessage: err.rawMessage,
        details: err.findDetails(ErrorDetailSchema),
        metadata: customHeaders(err.metadata),
      };
    }

    it.each(pairNames)("%s: a ConnectError keeps its code, message, details and metadata", async (pair) => {
      const ref = await errorOf(REF, "connect-error");
      expect(ref).toEqual({
        code: "NotFound",
        rawMessage: "subscriber sub_404 not found",
        details: [errorDetail],
        metadata: { "x-error-meta": "m1" },
      });
      expect(await errorOf(pair, "connect-error")).toEqual(ref);
      expect(await errorOf(pair, "unauthenticated")).toEqual(await errorOf(REF, "unauthenticated"));
    });

    it.each(pairNames)("%s: an unexpected Error becomes Internal \"internal error\", its message does not leak", async (pair) => {
      const ref = await errorOf(REF, "crash");
      expect(ref).toEqual({ code: "Internal", rawMessage: "internal error", details: [], metadata: {} });
      const got = await errorOf(pair, "crash");
      expect(got).toEqual(ref);
      expect(JSON.stringify(got)).not.toContain("hunter2");
    });

    it.each(pairNames)("%s: Unimplemented for a method the implementation leaves out, and for a service not served", async (pair) => {
      const unimplementedMethod = async (p: PairName) => {
        const err = await rejectionOf(world.client(p).deleteSubscriber({ id: "x" }));
        return { code: Code[err.code], rawMessage: err.rawMessage };
      };
      const ref = await unimplementedMethod(REF);
      expect(ref).toEqual({ code: "Unimplemented", rawMessage: "emailsvc.subscribers.v1.SubscriberService.DeleteSubscriber is not implemented" });
      expect(await unimplementedMethod(pair)).toEqual(ref);

      const unservedService = async (p: PairName) => {
        const err = await rejectionOf(createClient(TagService, world.transports[p]).getTag({ id: "x" }));
        return { code: Code[err.code], rawMessage: err.rawMessage };
      };
      const refService = await unservedService(REF);
      expect(refService.code).toBe("Unimplemented");
      expect(await unservedService(pair)).toEqual(refService);
    });
  });

  describe("deadlines", () => {
    // connect-node's server logs "handler for rpc … failed" when it writes the
    // answer of a handler that outlived its call (under Jest: in plain Node it
    // recognises the destroyed stream and stays silent). Our server checks the
    // stream first and never logs.
    let consoleError: jest.SpyInstance;
    beforeAll(() => {
      consoleError = jest.spyOn(console, "error").mockImplementation(() => undefined);
    });
    afterAll(() => consoleError.mockRestore());

    it.each(pairNames)("%s: timeoutMs 50 on a 500 ms handler gives DeadlineExceeded and aborts the handler's ctx.signal", async (pair) => {
      const logged = consoleError.mock.calls.length;
      const id = newCallId("deadline");
      const call = world.client(pair).getSubscriber({ id: "sleep-ignoring-signal:500" }, { timeoutMs: 50, headers: { "x-call-id": id } });
      const err = await rejectionOf(call);
      expect({ code: Code[err.code], rawMessage: err.rawMessage }).toEqual({ code: "DeadlineExceeded", rawMessage: "the operation timed out" });
      const record = await world.log.waitAborted(id);
      // The server's own deadline (DeadlineExceeded) or the client's RST_STREAM
      // (INTERNAL_ERROR for a deadline, as connect-node sends it), whichever came first.
      expect(["DeadlineExceeded", "Internal"]).toContain(Code[ConnectError.from(record.abortReason).code]);
      // The handler ignores its signal and answers after the client left: that must not break anything.
      await world.log.waitEnded(id);
      // By now (a timer tick after the handler returned) the server has dealt with its answer.
      if (pair.endsWith("our server")) expect(consoleError.mock.calls.slice(logged)).toEqual([]);
    });

    it.each(pairNames)("%s: ctx.timeoutMs() on the server reflects the call's timeout; none without one", async (pair) => {
      const client = world.client(pair);
      const remaining = Number((await client.getSubscriber({ id: "timeout" }, { timeoutMs: 10_000 })).subscriber?.email);
      expect(remaining).toBeGreaterThan(5_000);
      expect(remaining).toBeLessThanOrEqual(10_000);
      expect((await client.getSubscriber({ id: "timeout" })).subscriber?.email).toBe("undefined");
      // As in connect: timeoutMs <= 0 means no deadline.
      expect((await client.getSubscriber({ id: "timeout" }, { timeoutMs: 0 })).subscriber?.email).toBe("undefined");
    });

    it("the server enforces grpc-timeout by itself, like connect-node, when the client does not cancel", async () => {
      // A raw client that sends grpc-timeout: 50m and then waits without resetting the stream.
      const observe = async (url: string) => {
        const id = newCallId("server-deadline");
        const body = envelope(toBinary(GetSubscriberRequestSchema, create(GetSubscriberRequestSchema, { id: "sleep:500" })));
        const res = await rawCall(url, "/emailsvc.subscribers.v1.SubscriberService/GetSubscriber", { "grpc-timeout": "50m", "x-call-id": id }, body);
        const record = await world.log.waitEnded(id);
        return { grpc: grpcStatusOf(res), abortCode: Code[ConnectError.from(record.abortReason).code], aborted: record.abortedBeforeEnd };
      };
      const ref = await observe(world.stock.url);
      expect(ref).toEqual({ grpc: { status: String(Code.DeadlineExceeded), message: "the operation timed out" }, abortCode: "DeadlineExceeded", aborted: true });
      expect(await observe(world.ours.url)).toEqual(ref);
    });
  });

  describe("cancellation", () => {
    // What the handler's ctx.signal says depends on the RST_STREAM code the
    // client sends: CANCEL from our transport (as gRPC specifies, and as
    // grpc-js does), INTERNAL_ERROR from connect-node's client (it resets the
    // stream before it maps the abort to Canceled). So the server side is
    // compared with the stock server facing the same client.
    const sameClientOnStockServer: Record<(typeof pairNames)[number], PairName> = {
      "our transport → our server": "our transport → stock server",
      "stock transport → our server": REF,
      "our transport → stock server": "our transport → stock server",
    };

    it.each(pairNames)("%s: aborting the caller's signal mid-call gives Canceled and aborts the handler's ctx.signal", async (pair) => {
      const observe = async (p: PairName) => {
        const id = newCallId("cancel");
        const controller = new AbortController();
        const call = world.client(p).getSubscriber({ id: "sleep:5000" }, { signal: controller.signal, headers: { "x-call-id": id } });
        await world.log.waitStarted(id);
        controller.abort();
        const err = await rejectionOf(call);
        const record = await world.log.waitAborted(id);
        await world.log.waitEnded(id);
        return { code: Code[err.code], rawMessage: err.rawMessage, serverSaw: Code[ConnectError.from(record.abortReason).code] };
      };
      const client = { code: "Canceled", rawMessage: "AbortError: This operation was aborted" };
      expect(await observe(REF)).toEqual({ ...client, serverSaw: "Internal" });
      expect(await observe("our transport → stock server")).toEqual({ ...client, serverSaw: "Canceled" });
      expect(await observe(pair)).toEqual(await observe(sameClientOnStockServer[pair]));
    });

    it.each(pairNames)("%s: an abort reason reaches the caller as with stock connect", async (pair) => {
      const observe = async (p: PairName) => {
        const id = newCallId("cancel-reason");
        const controller = new AbortController();
        const call = world.client(p).getSubscriber({ id: "sleep:5000" }, { signal: controller.signal, headers: { "x-call-id": id } });
        await world.log.waitStarted(id);
        controller.abort(new ConnectError("shutting down", Code.Aborted));
        const err = await rejectionOf(call);
        const record = await world.log.waitAborted(id);
        await world.log.waitEnded(id);
        return { code: Code[err.code], rawMessage: err.rawMessage, serverSaw: Code[ConnectError.from(record.abortReason).code] };
      };
      // Not Canceled: both clients reset the stream with INTERNAL_ERROR.
      const ref = await observe(REF);
      expect(ref).toEqual({ code: "Aborted", rawMessage: "shutting down", serverSaw: "Internal" });
      expect(await observe(pair)).toEqual(ref);
    });

    it.each(pairNames)("%s: a signal aborted before the call fails it with Canceled, the handler never runs", async (pair) => {
      const id = newCallId("pre-aborted");
      const err = await rejectionOf(
        world.client(pair).getSubscriber({ id: "sleep:5000" }, { signal: AbortSignal.abort(), headers: { "x-call-id": id } }),
      );
      expect(Code[err.code]).toBe("Canceled");
      // Proof that nothing was sent: a call made after it on the same transport is served first.
      await world.client(pair).getSubscriber({ id: "known" });
      expect(world.log.get(id)).toBeUndefined();
    });
  });
});

describe("request headers, context values and interceptors", () => {
  const trace: string[] = [];
  const clientKey = createContextKey("unset");
  const clientInterceptor =
    (name: string): Interceptor =>
    (next) =>
    async (req) => {
      trace.push(`client ${name} > ${req.contextValues.get(clientKey)}`);
      req.header.append("x-client-chain", name);
      const res = await next(req);
      trace.push(`client ${name} < ${res.header.get("x-server-chain-out") ?? "-"}`);
      return res;
    };
  const serverInterceptor =
    (name: string): Interceptor =>
    (next) =>
    async (req) => {
      trace.push(`server ${name} > ${req.header.get("x-client-chain") ?? "-"}`);
      req.header.append("x-server-chain-in", name);
      req.contextValues.set(serverContextKey, `${req.contextValues.get(serverContextKey)}+${name}`);
      const res = await next(req);
      res.header.append("x-server-chain-out", name);
      trace.push(`server ${name} <`);
      return res;
    };

  let world: World;
  beforeAll(async () => {
    world = await startWorld({
      clientInterceptors: [clientInterceptor("A"), clientInterceptor("B")],
      serverInterceptors: [serverInterceptor("S1"), serverInterceptor("S2")],
    });
  });
  afterAll(async () => {
    await world?.close();
  });

  async function observe(pair: PairName) {
    trace.length = 0;
    let header: Headers | undefined;
    const res = await world.client(pair).getSubscriber(
      { id: "headers" },
      {
        headers: { "x-tenant": "acc_1", "x-request-id": "req-42" },
        contextValues: createContextValues().set(clientKey, "from-call-options"),
        onHeader: (h) => (header = h),
      },
    );
    return { handlerSaw: res.subscriber?.metadata, responseHeader: customHeaders(header), trace: [...trace] };
  }

  it.each(pairNames)("%s: request headers reach ctx.requestHeader; interceptors run on both sides, in order, with context values", async (pair) => {
    const ref = await observe(REF);
    expect(ref).toEqual({
      handlerSaw: { "x-tenant": "acc_1", "x-request-id": "req-42", "x-client-chain": "A, B", "x-server-chain-in": "S1, S2", "ctx.values": "unset+S1+S2" },
      responseHeader: { "x-server-chain-out": "S2, S1" },
      trace: ["client A > from-call-options", "client B > from-call-options", "server S1 > A, B", "server S2 > A, B", "server S2 <", "server S1 <", "client B < S2, S1", "client A < S2, S1"],
    });
    expect(await observe(pair)).toEqual(ref);
  });
});

describe("how routes are registered", () => {
  it("a service registered with its own options keeps them (connect-node serves it); an rpc() registration works through the fast path", async () => {
    const seen: string[] = [];
    const perService: Interceptor = (next) => async (req) => {
      seen.push(req.method.name);
      return next(req);
    };
    const server = await startGrpcServer({
      port: 0,
      routes: (router) => {
        router.service(SubscriberService, subscriberImpl(new CallLog()), { interceptors: [perService] });
        router.rpc(health.Health.method.check, async (req) => ({
          status: req.service === "" ? health.HealthCheckResponse_ServingStatus.SERVING : health.HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN,
        }));
      },
    });
    try {
      for (const transport of [createServiceTransport(server.url), createGrpcTransport({ baseUrl: server.url })]) {
        expect((await createClient(SubscriberService, transport).getSubscriber({ id: "known" })).subscriber?.id).toBe("sub_known");
        const healthClient = createClient(health.Health, transport);
        expect((await healthClient.check({ service: "" })).status).toBe(health.HealthCheckResponse_ServingStatus.SERVING);
        expect((await healthClient.check({ service: "x" })).status).toBe(health.HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN);
      }
      expect(seen).toEqual(["GetSubscriber", "GetSubscriber"]);
    } finally {
      await server.close();
    }
  });
});
