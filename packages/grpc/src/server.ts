// Server side of the internal gRPC hop: a Connect router served by Node's
// http2 module in cleartext, speaking gRPC (for our services and for grpc-js or
// any other gRPC client) and the Connect protocol (so `curl --http2-prior-knowledge`
// and `buf curl` work while debugging). Measurements and reasons: bench/README.md,
// "gRPC hop".
//
// Every request goes to connectNodeAdapter, except the one kind that makes up
// nearly all internal traffic: a unary call in the gRPC protocol with the
// protobuf codec and no compression. For those, connect-node's generic path
// (request/response async-iterable pipelines, protocol negotiation, converting
// the Node request into a "universal" one, and aborting an AbortSignal with a
// freshly built AbortError after every call) costs ≈ 500–800 µs of CPU per
// call, against ≈ 100 µs for a grpc-js server. The fast path below (≈ 120 µs) reads
// the one message, runs the same implementation through connect's own building
// blocks (createHandlerContext, invokeUnaryImplementation with the same
// interceptors, setTrailerStatus for errors), and writes headers, message and
// trailers through the same Node response API connect-node uses.
import * as http2 from "node:http2";
import type { Socket } from "node:net";
import { fromBinary, toBinary, type DescMethod } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createHandlerContext,
  createMethodImplSpec,
  createServiceImplSpec,
  type ConnectRouter,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";
import { grpcStatusOk, headerGrpcStatus, parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { listen, urlHost } from "@emailsvc/runtime";
import { toWebHeaders } from "./headers.js";

export interface GrpcServerOptions {
  /** `(router) => router.service(SomeService, impl)`. */
  routes: (router: ConnectRouter) => void;
  /** 0 picks a free port (tests); the chosen one is in RunningGrpcServer.port. */
  port: number;
  /** Interface to listen on; default 127.0.0.1. Containers pass 0.0.0.0. */
  host?: string;
  /** Server interceptors, outermost first. */
  interceptors?: Interceptor[];
}

export interface RunningGrpcServer {
  /** The port actually listened on. */
  port: number;
  /** `http://host:port`, for createServiceTransport(). */
  url: string;
  /**
   * Graceful shutdown: stop accepting connections, send GOAWAY on every open
   * connection (clients stop starting calls on it and reconnect elsewhere),
   * let calls in flight finish for up to `graceMs` (default 10 s), then
   * destroy what remains (RST_STREAM CANCEL: clients see CANCELED, handlers
   * see their `ctx.signal` abort). Resolves once the server is fully closed.
   * Calling it again returns the same promise.
   */
  close(graceMs?: number): Promise<void>;
}

const defaultGraceMs = 10_000;

/**
 * Responses at least this large are compressed when the client offers gzip
 * (grpc-js clients do by default; our transport does not). Inside the cluster
 * the CPU costs more than the bytes saved, so: never. Compressed *requests*
 * are still accepted (connect's default gzip/br), for interop.
 */
const compressMinBytes = Number.POSITIVE_INFINITY;

export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const host = options.host ?? "127.0.0.1";
  const interceptors = options.interceptors ?? [];
  const unaryRoutes = new Map<string, UnarySpec>();
  const adapter = connectNodeAdapter({
    routes: (router) => options.routes(recordUnaryRoutes(router, unaryRoutes)),
    interceptors,
    grpc: true,
    connect: true,
    grpcWeb: false,
    // No shutdownSignal: connect would add a listener to that one signal per
    // call in flight. Destroying a session at the end of close() aborts the
    // ctx.signal of its calls anyway.
    compressMinBytes,
  });

  const server = http2.createServer((req, res) => {
    const route = unaryRoutes.get(req.url);
    if (route !== undefined && isPlainGrpcUnary(req)) {
      serveGrpcUnary(req, res, route, interceptors).catch((reason: unknown) => {
        // Writing the response failed (e.g. a header value Node refuses); as connect-node does.
        console.error(`handler for rpc ${route.method.name} of ${route.method.parent.typeName} failed`, reason);
        if (!res.stream.destroyed) res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    } else {
      adapter(req, res);
    }
  });

  // Node's http2 module already sets TCP_NODELAY on the sockets it serves
  // (checked with strace on Node 20.20: a plain net server does not, an http2
  // server does), so Nagle's algorithm is not what made the hop slow. Setting
  // it here anyway keeps small HEADERS/DATA/trailer frames from waiting for a
  // delayed ACK (40 ms) should that default ever change.
  server.on("connection", (socket: Socket) => {
    socket.setNoDelay(true);
  });

  // http2.Server.close() waits for every open session, so shutdown must close
  // them itself.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  const port = await listen(server, options.port, host);

  let closing: Promise<void> | undefined;
  function close(graceMs = defaultGraceMs): Promise<void> {
    closing ??= new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      // Stop accepting; the callback runs once the last session has closed.
      server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      // GOAWAY (NO_ERROR, last stream id = the last one accepted): streams in
      // flight run to completion, then the session closes itself.
      for (const session of sessions) session.close();
      timer = setTimeout(() => {
        for (const session of sessions) session.destroy(undefined, http2.constants.NGHTTP2_CANCEL);
      }, graceMs);
    });
    return closing;
  }

  return { port, url: `http://${urlHost(host)}:${port}`, close };
}

type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;

/**
 * Passes every registration on to connect's router unchanged, and remembers
 * the unary methods registered without per-service options (those would change
 * limits or interceptors the fast path does not know about), by request path.
 */
function recordUnaryRoutes(router: ConnectRouter, into: Map<string, UnarySpec>): ConnectRouter {
  const remember = (spec: MethodImplSpec): void => {
    if (spec.kind === "unary") into.set(`/${spec.method.parent.typeName}/${spec.method.name}`, spec);
  };
  const recorder: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, routeOptions) {
      router.service(service, implementation, routeOptions);
      if (routeOptions === undefined) {
        const spec = createServiceImplSpec(service, implementation);
        for (const method of Object.values(spec.methods)) remember(method);
      }
      return recorder;
    },
    rpc(method, implementation, routeOptions) {
      router.rpc(method, implementation, routeOptions);
      if (routeOptions === undefined) remember(createMethodImplSpec(method, implementation));
      return recorder;
    },
  };
  return recorder;
}

/** A gRPC call with the protobuf codec and an uncompressed request: everything else goes to connect-node. */
function isPlainGrpcUnary(req: http2.Http2ServerRequest): boolean {
  const contentType = req.headers["content-type"];
  const encoding = req.headers["grpc-encoding"];
  return (
    req.method === "POST" &&
    (contentType === "application/grpc" || contentType === "application/grpc+proto") &&
    (encoding === undefined || encoding === "identity")
  );
}

/** gRPC length-prefixed message: 1 byte flags, 4 bytes big-endian length, payload. */
const envelopeHeaderBytes = 5;

/**
 * Reason the call's ctx.signal is aborted with once the response is written
 * (connect-node aborts it too, but without a reason, which makes Node build an
 * AbortError with a stack trace on every call).
 */
const callCompleted = new ConnectError("call completed", Code.Canceled);

async function serveGrpcUnary(
  req: http2.Http2ServerRequest,
  res: http2.Http2ServerResponse,
  spec: UnarySpec,
  interceptors: Interceptor[],
): Promise<void> {
  const method = spec.method;
  const timeout = parseTimeout(headerValue(req.headers["grpc-timeout"]), Number.MAX_SAFE_INTEGER);
  const context = createHandlerContext({
    service: method.parent,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: `http://${req.authority}${req.url}`,
    timeoutMs: timeout.timeoutMs,
    requestHeader: toWebHeaders(req.headers),
    responseHeader: { "content-type": "application/grpc+proto" },
    responseTrailer: { [headerGrpcStatus]: grpcStatusOk },
  });
  // The client reset the stream (cancelled, deadline) or the connection went
  // away before we answered: abort ctx.signal, as connect-node does.
  let answered = false;
  req.once("close", () => {
    if (answered) return;
    const rst = req.stream.rstCode;
    const code = rst === http2.constants.NGHTTP2_NO_ERROR || rst === http2.constants.NGHTTP2_CANCEL ? Code.Canceled : Code.Internal;
    context.abort(new ConnectError(`http/2 stream closed with error code ${rst}`, code));
  });

  let frame: Buffer | undefined;
  try {
    if (timeout.error) throw timeout.error;
    const input = parseRequest(await readBody(req), method);
    const output = await invokeUnaryImplementation(spec, context, input, interceptors);
    const payload = toBinary(method.output, output);
    frame = Buffer.allocUnsafe(envelopeHeaderBytes + payload.byteLength);
    frame[0] = 0;
    frame.writeUInt32BE(payload.byteLength, 1);
    frame.set(payload, envelopeHeaderBytes);
  } catch (err) {
    // As connect's gRPC handler: a ConnectError keeps its code, message,
    // details and metadata; anything else becomes INTERNAL "internal error"
    // without its message, which may hold details that must not leak.
    const error = err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
    setTrailerStatus(context.responseTrailer, error);
    context.abort(error);
    frame = undefined;
  }
  answered = true;
  context.abort(callCompleted);
  if (res.stream.destroyed || res.stream.closed) return;
  res.writeHead(200, toNodeHeaders(context.responseHeader));
  res.addTrailers(toNodeHeaders(context.responseTrailer));
  if (frame) res.end(frame);
  else res.end();
}

function readBody(req: http2.Http2ServerRequest): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    req.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
    });
    req.once("end", () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length)));
    req.once("error", reject);
    req.once("aborted", () => reject(new ConnectError("the client cancelled the call", Code.Canceled)));
  });
}

/** Exactly one uncompressed message, with connect's error codes and messages. */
function parseRequest(body: Buffer, method: DescMethod) {
  if (body.length === 0) {
    throw new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
  }
  if (body.length < envelopeHeaderBytes) {
    throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  }
  const flags = body[0]!;
  const length = body.readUInt32BE(1);
  const end = envelopeHeaderBytes + length;
  if (end > body.length) {
    throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  }
  if ((flags & 0b1) !== 0) {
    // We passed the request on only without grpc-encoding, so this is a broken client.
    throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
  }
  if (end < body.length) {
    throw new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented);
  }
  try {
    return fromBinary(method.input, body.subarray(envelopeHeaderBytes, end));
  } catch (err) {
    throw new ConnectError(`parse binary: ${err instanceof Error ? err.message : String(err)}`, Code.Internal);
  }
}

function headerValue(value: string | string[] | undefined): string | null {
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}


function toNodeHeaders(headers: Headers): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  headers.forEach((value, key) => {
    // Headers.forEach joins repeated values with ", " except set-cookie, whose
    // values it yields one by one: keep them all, as connect-node does.
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [String(existing), value];
  });
  return out;
}
