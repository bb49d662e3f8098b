// Shared by the gRPC tests of the runtime kit: a small SubscriberService whose
// behaviour is chosen by the request, the kit's server and a stock
// connect-node server serving it, the client pairs that cross them, a grpc-js
// client built from the .proto files, and polling helpers.
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  createClient,
  createContextKey,
  encodeBinaryHeader,
  type Client,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
  type Transport,
} from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ErrorDetailSchema, SubscriberService, SubscriberStatus, type Subscriber } from "@emailsvc/proto";
import { HealthState } from "../../src/health.js";
import { startGrpcServer, type RunningGrpcServer } from "../../src/server.js";
import { createServiceTransport } from "../../src/transport.js";

// ---------------------------------------------------------------------------
// Polling, never fixed sleeps as assertions.

/** Resolves once `check` returns a value other than undefined/false; fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `promise`, or a rejection naming `what` if it has not settled within `ms` (a generous bound, not a timing assertion). */
export function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

/** The ConnectError a call rejected with (fails the test if it resolved). */
export async function rejectionOf(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    return err as ConnectError;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
    if (signal?.aborted) done();
  });
}

// ---------------------------------------------------------------------------
// What the handlers saw, by the x-call-id request header.

export interface CallRecord {
  id: string;
  /** ctx.timeoutMs() when the handler started. */
  timeoutMs: number | undefined;
  /** Set once ctx.signal aborted while the handler ran (or before it returned). */
  abortReason?: unknown;
  abortedBeforeEnd: boolean;
  /** The handler's own work is over (it returned or threw). */
  ended: boolean;
}

export class CallLog {
  readonly calls = new Map<string, CallRecord>();

  start(ctx: HandlerContext): CallRecord {
    const id = ctx.requestHeader.get("x-call-id") ?? `anonymous-${this.calls.size}`;
    const record: CallRecord = { id, timeoutMs: ctx.timeoutMs(), abortedBeforeEnd: false, ended: false };
    this.calls.set(id, record);
    const onAbort = (): void => {
      record.abortReason = ctx.signal.reason;
      if (!record.ended) record.abortedBeforeEnd = true;
    };
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener("abort", onAbort, { once: true });
    return record;
  }

  get(id: string): CallRecord | undefined {
    return this.calls.get(id);
  }

  waitStarted(id: string): Promise<CallRecord> {
    return waitFor(`handler of call ${id} to start`, () => this.calls.get(id));
  }

  waitAborted(id: string): Promise<CallRecord> {
    return waitFor(`ctx.signal of call ${id} to abort`, () => {
      const r = this.calls.get(id);
      return r?.abortedBeforeEnd ? r : undefined;
    });
  }

  /** Handlers that sleep must be over before a test ends (no timers left behind). */
  waitEnded(id: string, timeoutMs = 5000): Promise<CallRecord> {
    return waitFor(`handler of call ${id} to end`, () => {
      const r = this.calls.get(id);
      return r?.ended ? r : undefined;
    }, timeoutMs);
  }
}

let callCounter = 0;
export function newCallId(prefix = "call"): string {
  return `${prefix}-${process.pid}-${++callCounter}`;
}

// ---------------------------------------------------------------------------
// The service under test. Behaviour by request:
// - CreateSubscriber echoes its request into a Subscriber, sets response
//   headers and trailers.
// - GetSubscriber by id: "known", "connect-error", "unauthenticated", "crash",
//   "headers", "timeout", "sleep:<ms>" (honours ctx.signal),
//   "sleep-ignoring-signal:<ms>".
// - every other method is left unimplemented (connect answers Unimplemented).

export const createdAt = timestampFromMs(Date.UTC(2026, 10, 22, 11, 18, 0, 123));
// Nanosecond precision survives only if the wire is protobuf binary.
export const updatedAt = { ...timestampFromMs(Date.UTC(2026, 10, 23, 8, 0, 0)), nanos: 456_789_012 };

/** Set by server interceptors for the handler (ctx.values). */
export const serverContextKey = createContextKey("unset");

export const errorDetail = create(ErrorDetailSchema, {
  code: "not_found",
  fieldViolations: [{ field: "id", description: "no subscriber with this id" }],
  existingId: "sub_existing",
});

export function subscriberImpl(log: CallLog): Partial<ServiceImpl<typeof SubscriberService>> {
  return {
    async createSubscriber(req, ctx) {
      // Let the event loop turn: a server that aborted ctx.signal too early
      // (e.g. on the request's "close" after reading the body) shows here.
      await new Promise((resolve) => setImmediate(resolve));
      ctx.responseHeader.set("x-handler-header", "h1");
      ctx.responseHeader.append("x-multi", "a");
      ctx.responseHeader.append("x-multi", "b");
      ctx.responseHeader.append("set-cookie", "c1=1");
      ctx.responseHeader.append("set-cookie", "c2=2");
      ctx.responseHeader.set("x-data-bin", encodeBinaryHeader(new Uint8Array([0, 1, 2, 250, 255])));
      ctx.responseTrailer.set("x-handler-trailer", "t1");
      ctx.responseTrailer.set("x-trailer-bin", encodeBinaryHeader(new Uint8Array([9, 8, 7])));
      return {
        subscriber: {
          id: "sub_echo",
          email: req.email,
          status: req.status === SubscriberStatus.UNSPECIFIED ? SubscriberStatus.ACTIVE : req.status,
          metadata: { ...req.metadata, signalAbortedDuringCall: ctx.signal.aborted },
          tags: req.tags,
          createdAt,
          updatedAt,
        },
      };
    },

    async getSubscriber(req, ctx) {
      const [kind, arg] = req.id.split(":");
      switch (kind) {
        case "known":
          return { subscriber: { id: "sub_known", email: "known@example.com", status: SubscriberStatus.ACTIVE, tags: ["a", "b"], createdAt } };
        case "connect-error":
          throw new ConnectError("subscriber sub_404 not found", Code.NotFound, { "x-error-meta": "m1" }, [
            { desc: ErrorDetailSchema, value: errorDetail },
          ]);
        case "unauthenticated":
          throw new ConnectError("missing tenant", Code.Unauthenticated);
        case "crash":
          throw new Error("secret: the database password is hunter2");
        case "headers": {
          const seen: Record<string, string> = {};
          ctx.requestHeader.forEach((value, key) => {
            if (key.startsWith("x-")) seen[key] = value;
          });
          seen["ctx.values"] = ctx.values.get(serverContextKey);
          return { subscriber: { id: "headers", metadata: seen } };
        }
        case "timeout":
          return { subscriber: { id: "timeout", email: String(ctx.timeoutMs()) } };
        case "sleep":
        case "sleep-ignoring-signal": {
          const record = log.start(ctx);
          try {
            await sleep(Number(arg), kind === "sleep" ? ctx.signal : undefined);
          } finally {
            record.ended = true;
          }
          if (kind === "sleep" && ctx.signal.aborted) throw ctx.signal.reason;
          return { subscriber: { id: "slept" } };
        }
        default:
          throw new ConnectError(`unknown test behaviour ${req.id}`, Code.InvalidArgument);
      }
    },
  };
}

export function serviceRoutes(log: CallLog): (router: ConnectRouter) => void {
  const health = new HealthState();
  const healthRoutes = health.routes([SubscriberService.typeName]);
  return (router) => {
    router.service(SubscriberService, subscriberImpl(log));
    healthRoutes(router);
  };
}

/** The request echoed by CreateSubscriber in most tests: Struct, repeated fields, a 100 KB string. */
export const bigString = "x".repeat(100 * 1024) + "…end";
export const echoRequest = {
  email: "echo@example.com",
  tags: ["alpha", "beta", "gamma", "ünïcode ✓"],
  status: SubscriberStatus.BOUNCED,
  metadata: {
    plan: "pro",
    seats: 42,
    ratio: 0.25,
    active: true,
    nothing: null,
    nested: { list: [1, "two", false, { deep: "yes" }], empty: {} },
    big: bigString,
  },
};

export function expectedEcho(): Partial<Subscriber> {
  return {
    id: "sub_echo",
    email: echoRequest.email,
    status: SubscriberStatus.BOUNCED,
    tags: echoRequest.tags,
    metadata: { ...echoRequest.metadata, signalAbortedDuringCall: false },
    createdAt: expect.objectContaining({ seconds: createdAt.seconds, nanos: createdAt.nanos }),
    updatedAt: expect.objectContaining({ seconds: updatedAt.seconds, nanos: 456_789_012 }),
  };
}

// ---------------------------------------------------------------------------
// Servers.

export interface TestServer {
  port: number;
  url: string;
  close(graceMs?: number): Promise<void>;
}

/** A server built from connectNodeAdapter only, with connect-node's defaults. */
export async function startStockServer(options: {
  routes: (router: ConnectRouter) => void;
  interceptors?: Interceptor[];
  port?: number;
  /** Runs before connect sees a request; return true if it answered the request itself. */
  intercept?: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => boolean;
}): Promise<TestServer> {
  const adapter = connectNodeAdapter({ routes: options.routes, interceptors: options.interceptors ?? [], grpc: true, connect: true, grpcWeb: false });
  const server = http2.createServer((req, res) => {
    if (options.intercept?.(req, res)) return;
    adapter(req, res);
  });
  return listen(server, options.port ?? 0);
}

/** Listens on 127.0.0.1 and closes by destroying every session (tests need no grace here). */
export async function listen(server: http2.Http2Server, port: number): Promise<TestServer> {
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const actual = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    port: actual,
    url: `http://127.0.0.1:${actual}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.destroy();
      });
      return closing;
    },
  };
}

// ---------------------------------------------------------------------------
// The client/server pairs. The reference is stock connect-node on both sides;
// each of the others has at least one fast path, against a stock other side
// (or against the other fast path).

export const pairNames = ["our transport → our server", "stock transport → our server", "our transport → stock server"] as const;
export type PairName = (typeof pairNames)[number] | "stock transport → stock server";

export interface World {
  log: CallLog;
  ours: RunningGrpcServer;
  stock: TestServer;
  /** Every pair, the reference ("stock transport → stock server") included. */
  transports: Record<PairName, Transport>;
  client(pair: PairName): Client<typeof SubscriberService>;
  close(): Promise<void>;
}

export async function startWorld(options: { serverInterceptors?: Interceptor[]; clientInterceptors?: Interceptor[] } = {}): Promise<World> {
  const log = new CallLog();
  const routes = serviceRoutes(log);
  const ours = await startGrpcServer({ routes, port: 0, interceptors: options.serverInterceptors });
  const stock = await startStockServer({ routes, interceptors: options.serverInterceptors });
  const interceptors = options.clientInterceptors ?? [];
  const transports: Record<PairName, Transport> = {
    "stock transport → stock server": createGrpcTransport({ baseUrl: stock.url, interceptors }),
    "our transport → our server": createServiceTransport(ours.url, { interceptors }),
    "stock transport → our server": createGrpcTransport({ baseUrl: ours.url, interceptors }),
    "our transport → stock server": createServiceTransport(stock.url, { interceptors }),
  };
  return {
    log,
    ours,
    stock,
    transports,
    client: (pair) => createClient(SubscriberService, transports[pair]),
    // Closing the servers closes the clients' connections too (GOAWAY, then
    // the client's session manager drops the idle connection).
    close: async () => {
      await Promise.all([ours.close(1000), stock.close()]);
    },
  };
}

// ---------------------------------------------------------------------------
// A plain grpc-js client from the .proto files (no Connect code).

export const protoRoot = join(__dirname, "..", "..", "..", "..", "proto");

export interface GrpcJsClients {
  subscribers: grpc.Client & Record<string, any>;
  tags: grpc.Client & Record<string, any>;
  health: grpc.Client & Record<string, any>;
  close(): void;
}

export function grpcJsClients(url: string, channelOptions: grpc.ChannelOptions = {}): GrpcJsClients {
  const definition = protoLoader.loadSync(
    ["emailsvc/subscribers/v1/subscribers.proto", "emailsvc/subscribers/v1/tags.proto", "grpc/health/v1/health.proto"],
    { includeDirs: [protoRoot], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
  );
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const address = url.replace(/^http:\/\//, "");
  const credentials = grpc.credentials.createInsecure();
  const subscribers = new pkg.emailsvc.subscribers.v1.SubscriberService(address, credentials, channelOptions);
  const tags = new pkg.emailsvc.subscribers.v1.TagService(address, credentials, channelOptions);
  const health = new pkg.grpc.health.v1.Health(address, credentials, channelOptions);
  return {
    subscribers,
    tags,
    health,
    close() {
      subscribers.close();
      tags.close();
      health.close();
    },
  };
}

export interface GrpcJsResult<T> {
  error?: grpc.ServiceError;
  response?: T;
  headers?: Record<string, unknown>;
  status?: grpc.StatusObject;
}

/** A unary grpc-js call, with its response metadata (headers) and status (trailers). */
export function grpcJsUnary<T>(client: any, method: string, request: object, metadata = new grpc.Metadata(), options: grpc.CallOptions = {}): Promise<GrpcJsResult<T>> {
  return new Promise((resolve) => {
    const result: GrpcJsResult<T> = {};
    let pending = 2;
    const settle = (): void => {
      if (--pending === 0) resolve(result);
    };
    const call: grpc.ClientUnaryCall = client[method](request, metadata, options, (err: grpc.ServiceError | null, res: T) => {
      if (err) result.error = err;
      else result.response = res;
      settle();
    });
    call.on("metadata", (md: grpc.Metadata) => {
      result.headers = md.getMap();
    });
    call.on("status", (status: grpc.StatusObject) => {
      result.status = status;
      settle();
    });
  });
}

/** The x-* entries of a Headers object, for comparing what two pairs delivered. */
export function customHeaders(headers: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  headers?.forEach((value, key) => {
    if (key.startsWith("x-")) out[key] = value;
  });
  return out;
}


// ---------------------------------------------------------------------------
// A raw HTTP/2 client, for requests no gRPC client would send.

export interface RawResponse {
  status: number | undefined;
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
  rstCode: number;
}

/** One gRPC envelope: flags, big-endian length, payload. */
export function envelope(payload: Uint8Array, flags = 0): Buffer {
  const frame = Buffer.alloc(5 + payload.byteLength);
  frame[0] = flags;
  frame.writeUInt32BE(payload.byteLength, 1);
  frame.set(payload, 5);
  return frame;
}

export async function rawCall(url: string, path: string, headers: http2.OutgoingHttpHeaders, body: Buffer): Promise<RawResponse> {
  const session = http2.connect(url);
  try {
    await new Promise<void>((resolve, reject) => {
      session.once("connect", () => resolve());
      session.once("error", reject);
    });
    return await new Promise<RawResponse>((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
      const result: RawResponse = { status: undefined, headers: {}, trailers: {}, body: Buffer.alloc(0), rstCode: 0 };
      const chunks: Buffer[] = [];
      stream.on("response", (h) => {
        result.headers = h;
        result.status = Number(h[":status"]);
      });
      stream.on("trailers", (t) => {
        result.trailers = t;
      });
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("error", () => undefined); // "close" carries the RST_STREAM code
      stream.on("close", () => {
        result.body = Buffer.concat(chunks);
        result.rstCode = stream.rstCode;
        resolve(result);
      });
      session.once("error", reject);
      stream.end(body);
    });
  } finally {
    session.destroy();
  }
}

/** grpc-status and grpc-message of a raw response, from the trailers or a trailers-only response. */
export function grpcStatusOf(res: RawResponse): { status: string | undefined; message: string | undefined } {
  const source = res.trailers["grpc-status"] !== undefined ? res.trailers : res.headers;
  const status = source["grpc-status"];
  const message = source["grpc-message"];
  return {
    status: status === undefined ? undefined : String(status),
    message: message === undefined ? undefined : decodeURIComponent(String(message)),
  };
}
