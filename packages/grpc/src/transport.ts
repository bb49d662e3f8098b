// Client side of the internal gRPC hop (gRPC protocol over HTTP/2 cleartext).
//
// Measured in bench/grpc-hop (bench/README.md, "gRPC hop"): a unary call costs
// connect-node's client ≈ 750 µs of CPU against ≈ 250 µs for grpc-js's, and
// that, not the network, is what limits the hop: Node already sets TCP_NODELAY
// on HTTP/2 sockets, one session carries every call, small messages are never
// compressed. The CPU goes to connect-node's generic machinery for every call
// kind: async-iterable pipelines for a single request and a single response
// message, a per-call "sentinel" that allocates a ConnectError (with a stack
// trace) even on success, aborting the call's AbortSignal when it succeeds
// (Node then builds an AbortError with a stack trace), URL parsing and header
// conversions.
//
// So unary calls take a direct path below (≈ 190 µs per call). It keeps what
// defines a Connect client (createClient, interceptors, deadlines,
// cancellation, response headers and trailers, ConnectError with codes,
// details and metadata, connect's own validation of gRPC responses and
// trailers) and connect-node's Http2SessionManager for the connection
// (keepalive, reconnection, GOAWAY handling). Streaming calls go through
// connect-node's createGrpcTransport, on the same connection.
import * as http2 from "node:http2";
import {
  create,
  fromBinary,
  isMessage,
  toBinary,
  type DescMessage,
  type DescMethodUnary,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  type Interceptor,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { getAbortSignalReason } from "@connectrpc/connect/protocol";
import { headerGrpcStatus, requestHeader, validateResponse, validateTrailer } from "@connectrpc/connect/protocol-grpc";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { toWebHeaders } from "./headers.js";
import { clientTelemetry } from "@emailsvc/telemetry";

export interface ServiceTransportOptions {
  /** Applied to every call (unary and streaming), outermost first, inside the telemetry interceptor. */
  interceptors?: Interceptor[];
  /** Spans and metrics of every call (default true); off only where its cost is measured (bench/grpc-hop). */
  telemetry?: boolean;
}

/**
 * Keepalive of the one HTTP/2 connection per transport (connect-node's
 * Http2SessionManager; the names mirror gRPC core's keepalive arguments).
 * None of these is a speed fix: they make a dead peer (a pod gone without a
 * FIN/RST) a fast UNAVAILABLE instead of a call that hangs until its deadline.
 */
const sessionOptions = {
  // PING a connection whose calls have been silent for this long, and verify an
  // idle connection with a PING before the first call after this long. Idle
  // connections are not pinged (pingIdleConnection stays off), which is what
  // gRPC servers that police pings (too_many_pings) expect. Under load every
  // response pushes the timer back, so no PING is sent at all.
  pingIntervalMs: 30_000,
  // A PING unanswered for this long kills the connection; the next call opens a new one.
  pingTimeoutMs: 10_000,
  // Close a connection nobody used for 5 minutes (connect-node's default: 15).
  // The one connection pins every call to one replica behind a Kubernetes
  // Service; a client that went quiet reconnects, and may land elsewhere.
  idleConnectionTimeoutMs: 5 * 60_000,
} as const;

/**
 * Creates the Transport a service uses to call another service:
 * `createClient(SubscriberService, createServiceTransport(url))`.
 *
 * - gRPC protocol, binary (protobuf) codec, HTTP/2 cleartext: what every
 *   service serves (startGrpcServer) and what grpc-js and other gRPC clients speak.
 * - One HTTP/2 session per transport, multiplexing every call: create one
 *   transport per target service at start-up and share it.
 * - No compression, neither asked for nor sent: inside the cluster bytes are
 *   cheaper than the CPU to gzip them, and most messages are smaller than the
 *   1 KiB threshold anyway.
 */
export function createServiceTransport(baseUrl: string, options: ServiceTransportOptions = {}): Transport {
  // Every call gets a client span and its trace context in `traceparent`.
  const interceptors = [...(options.telemetry === false ? [] : [clientTelemetry()]), ...(options.interceptors ?? [])];
  const sessionManager = new Http2SessionManager(baseUrl, sessionOptions);
  // Streaming calls (none of our contracts has one yet) use connect-node's
  // generic transport, on the same connection.
  const streaming = createGrpcTransport({
    baseUrl,
    sessionManager,
    useBinaryFormat: true,
    interceptors,
    acceptCompression: [],
  });
  const unaryCall = createUnaryCaller(sessionManager);
  // Interceptors wrap the call once, not per call; the first in the list is the outermost.
  const next = interceptors.reduceRight((inner, interceptor) => interceptor(inner), unaryCall as AnyFn) as UnaryFn;
  const baseUrlNoSlash = baseUrl.replace(/\/+$/, "");
  return {
    unary(method, signal, timeoutMs, header, input, contextValues) {
      // As in connect: timeoutMs <= 0 means "no deadline".
      const deadline = timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : undefined;
      const call = callSignal(signal, deadline);
      const req: UnaryRequest = {
        stream: false,
        service: method.parent,
        method: method as DescMethodUnary,
        requestMethod: "POST",
        url: `${baseUrlNoSlash}/${method.parent.typeName}/${method.name}`,
        header: requestHeader(true, deadline, header),
        contextValues: contextValues ?? createContextValues(),
        message: isMessage(input, method.input) ? input : create(method.input, input),
        signal: call.signal,
      };
      return next(req).then(
        (res) => {
          call.done();
          return res as UnaryResponse<typeof method.input, typeof method.output>;
        },
        (reason: unknown) => {
          throw call.fail(reason);
        },
      );
    },
    stream: streaming.stream.bind(streaming),
  };
}

type AnyFn = Parameters<Interceptor>[0];
type UnaryFn = (req: UnaryRequest) => Promise<UnaryResponse>;

/**
 * The signal of one call: aborted by the caller's signal or by the deadline.
 * Unlike connect's runUnaryCall it is not aborted when the call succeeds
 * (that allocates an AbortError with a stack trace per call); instead done()
 * detaches it from the caller's signal and clears the deadline timer, so
 * nothing outlives the call.
 */
function callSignal(callerSignal: AbortSignal | undefined, deadlineMs: number | undefined) {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onCallerAbort = (): void => controller.abort(getAbortSignalReason(callerSignal!));
  if (callerSignal) {
    if (callerSignal.aborted) onCallerAbort();
    else callerSignal.addEventListener("abort", onCallerAbort);
  }
  if (deadlineMs !== undefined) {
    timer = setTimeout(() => controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded)), deadlineMs);
  }
  function done(): void {
    clearTimeout(timer);
    callerSignal?.removeEventListener("abort", onCallerAbort);
  }
  return {
    signal: controller.signal,
    done,
    /** Same error as connect's: the abort reason if the call was aborted, else the failure itself. */
    fail(reason: unknown): ConnectError {
      const err = controller.signal.aborted
        ? ConnectError.from(getAbortSignalReason(controller.signal), Code.Canceled)
        : ConnectError.from(reason);
      controller.abort(err);
      done();
      return err;
    },
  };
}

/** gRPC length-prefixed message: 1 byte flags, 4 bytes big-endian length, payload. */
const envelopeHeaderBytes = 5;
const flagCompressed = 0b0000_0001;

function createUnaryCaller(sessionManager: Http2SessionManager) {
  // The path of the last URL seen: every call of a transport has the same origin,
  // and usually one of a few paths, so this saves a URL parse per call.
  let lastUrl = "";
  let lastPath = "";

  return async function unaryCall<I extends DescMessage, O extends DescMessage>(
    req: UnaryRequest<I, O>,
  ): Promise<UnaryResponse<I, O>> {
    const { method, signal } = req;
    if (signal.aborted) throw ConnectError.from(getAbortSignalReason(signal), Code.Canceled);
    if (req.url !== lastUrl) {
      const url = new URL(req.url);
      if (url.origin !== sessionManager.authority) {
        throw new ConnectError(`cannot call ${url.origin}: this transport is connected to ${sessionManager.authority}`, Code.Internal);
      }
      lastUrl = req.url;
      lastPath = url.pathname + url.search;
    }
    const path = lastPath;
    const payload = toBinary(method.input, req.message);
    const frame = Buffer.allocUnsafe(envelopeHeaderBytes + payload.byteLength);
    frame[0] = 0;
    frame.writeUInt32BE(payload.byteLength, 1);
    frame.set(payload, envelopeHeaderBytes);

    const headers: http2.OutgoingHttpHeaders = {};
    req.header.forEach((value, key) => {
      headers[key] = value;
    });

    // A stream the server refused (REFUSED_STREAM: it was past the GOAWAY of a
    // server shutting down, or over its stream limit) was not processed, so it
    // is retried once, on a new connection if need be, as gRPC clients do.
    for (let attempt = 1; ; attempt++) {
      const stream = await openStream(sessionManager, path, headers, signal);
      const result = await exchange(stream, req, frame, attempt < 2);
      if (result !== refused) return result;
    }
  };
}

const refused = Symbol("refused");

/** Sends the request on the stream and reads the whole response (or the reason there is none). */
function exchange<I extends DescMessage, O extends DescMessage>(
  stream: http2.ClientHttp2Stream,
  req: UnaryRequest<I, O>,
  frame: Buffer,
  mayRetry: boolean,
): Promise<UnaryResponse<I, O> | typeof refused> {
  const { signal } = req;
  return new Promise<UnaryResponse<I, O> | typeof refused>((resolve, reject) => {
    let responseHeaders: http2.IncomingHttpHeaders | undefined;
    let responseTrailers: http2.IncomingHttpHeaders | undefined;
    let streamError: unknown;
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;

    const onAbort = (): void => {
      const reason = ConnectError.from(getAbortSignalReason(signal), Code.Canceled);
      // gRPC maps a cancelled call to RST_STREAM CANCEL, anything else to INTERNAL_ERROR.
      fail(reason, reason.code === Code.Canceled ? http2.constants.NGHTTP2_CANCEL : http2.constants.NGHTTP2_INTERNAL_ERROR);
    };
    signal.addEventListener("abort", onAbort);
    if (signal.aborted) onAbort();

    function done(result: UnaryResponse<I, O> | typeof refused): void {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      resolve(result);
    }
    function fail(error: ConnectError, rstCode?: number): void {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      if (!stream.closed && rstCode !== undefined) stream.close(rstCode);
      reject(error);
    }

    stream.on("response", (h) => {
      responseHeaders = h;
    });
    stream.on("trailers", (t) => {
      responseTrailers = t;
    });
    stream.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
    });
    stream.on("error", (err) => {
      // "close" follows; it knows the RST_STREAM code, if any.
      streamError = err;
    });
    stream.on("close", () => {
      if (settled) return;
      if (stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM && responseHeaders === undefined && mayRetry) {
        done(refused);
      } else if (stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR || responseHeaders === undefined) {
        fail(errorFromClosedStream(stream.rstCode, streamError));
      } else {
        try {
          done(readResponse(req, responseHeaders, responseTrailers, chunks, received));
        } catch (err) {
          fail(ConnectError.from(err, Code.Internal));
        }
      }
    });
    stream.end(frame);
  });
}

/**
 * A new stream on the managed connection. Usually immediate, but connecting or
 * verifying an idle connection can take long (a black-holed address only fails
 * after the TCP timeout): the call's deadline and cancellation apply here too.
 */
function openStream(
  sessionManager: Http2SessionManager,
  path: string,
  headers: http2.OutgoingHttpHeaders,
  signal: AbortSignal,
): Promise<http2.ClientHttp2Stream> {
  const pending = sessionManager.request("POST", path, headers, {});
  return new Promise<http2.ClientHttp2Stream>((resolve, reject) => {
    const onAbort = (): void => {
      reject(ConnectError.from(getAbortSignalReason(signal), Code.Canceled));
      pending.then(
        (stream) => stream.close(http2.constants.NGHTTP2_CANCEL),
        () => undefined,
      );
    };
    signal.addEventListener("abort", onAbort);
    pending.then(
      (stream) => {
        signal.removeEventListener("abort", onAbort);
        resolve(stream);
      },
      (reason: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(reason);
      },
    );
  });
}

/** Validates status, headers and trailers the way connect's gRPC transport does, and decodes the one message. */
function readResponse<I extends DescMessage, O extends DescMessage>(
  req: UnaryRequest<I, O>,
  nodeHeaders: http2.IncomingHttpHeaders,
  nodeTrailers: http2.IncomingHttpHeaders | undefined,
  chunks: Buffer[],
  received: number,
): UnaryResponse<I, O> {
  const header = toWebHeaders(nodeHeaders);
  const trailer = nodeTrailers ? toWebHeaders(nodeTrailers) : new Headers();
  // Throws on an HTTP status other than 200 or a content type that is not gRPC;
  // returns the error of a trailers-only response (status in the headers).
  const { headerError } = validateResponse(Number(nodeHeaders[":status"] ?? 0), header);
  const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
  let message: MessageShape<O> | undefined;
  let offset = 0;
  while (offset < body.length) {
    if (body.length - offset < envelopeHeaderBytes) {
      throw new ConnectError("protocol error: incomplete envelope", Code.Internal);
    }
    const flags = body[offset]!;
    const length = body.readUInt32BE(offset + 1);
    const end = offset + envelopeHeaderBytes + length;
    if (end > body.length) {
      const got = body.length - offset - envelopeHeaderBytes;
      throw new ConnectError(`protocol error: promised ${length} bytes in enveloped message, got ${got} bytes`, Code.Internal);
    }
    if ((flags & flagCompressed) !== 0) {
      // We never send grpc-accept-encoding, so a server must not compress.
      throw new ConnectError("protocol error: received a compressed message, but no compression was negotiated", Code.Internal);
    }
    if (message !== undefined) {
      throw new ConnectError("protocol error: received extra output message for unary method", Code.Unimplemented);
    }
    try {
      message = fromBinary(req.method.output, body.subarray(offset + envelopeHeaderBytes, end));
    } catch (err) {
      throw new ConnectError(`parse binary: ${err instanceof Error ? err.message : String(err)}`, Code.Internal);
    }
    offset = end;
  }
  // Throws the error carried by grpc-status/grpc-message/grpc-status-details-bin.
  validateTrailer(trailer, header);
  if (message === undefined) {
    if (headerError) throw headerError;
    throw new ConnectError(
      "protocol error: missing output message for unary method",
      trailer.has(headerGrpcStatus) ? Code.Unimplemented : Code.Unknown,
    );
  }
  if (headerError) {
    throw new ConnectError("protocol error: received output message for unary method with error status", Code.Unknown);
  }
  return { stream: false, service: req.service, method: req.method, header, message, trailer };
}


/**
 * The error of a stream that closed before a complete response: from its
 * RST_STREAM code if it has one, else from the Node error that ended it. Same
 * codes and messages as connect-node's client (which follows gRPC's mapping,
 * https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md#errors), so
 * code that branches on them (retry on UNAVAILABLE…) sees no difference.
 */
function errorFromClosedStream(rstCode: number, cause: unknown): ConnectError {
  const fromRst = errorFromRstCode(rstCode);
  if (fromRst) return fromRst;
  if (cause === undefined) return new ConnectError("http/2 stream closed without a response", Code.Unavailable);
  // Node error codes along the cause chain (bounded: chains can be cyclic).
  const codes: unknown[] = [];
  let e: unknown = cause;
  for (let depth = 0; e instanceof Error && depth < 10; depth++, e = e.cause) codes.push((e as { code?: unknown }).code);
  const any = (...names: string[]): boolean => codes.some((c) => names.includes(c as string));
  let code = Code.Internal;
  if (any("ERR_STREAM_WRITE_AFTER_END", "ERR_STREAM_DESTROYED", "ERR_HTTP2_INVALID_STREAM", "ECONNRESET")) {
    code = Code.Aborted;
  } else if (any("ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED")) {
    code = Code.Unavailable;
  }
  return ConnectError.from(cause, code);
}

const rstCodes: Record<number, [name: string, code: Code]> = {
  0x1: ["PROTOCOL_ERROR", Code.Internal],
  0x2: ["INTERNAL_ERROR", Code.Internal],
  0x3: ["FLOW_CONTROL_ERROR", Code.Internal],
  0x4: ["SETTINGS_TIMEOUT", Code.Internal],
  0x6: ["FRAME_SIZE_ERROR", Code.Internal],
  0x7: ["REFUSED_STREAM", Code.Unavailable],
  0x8: ["CANCEL", Code.Canceled],
  0x9: ["COMPRESSION_ERROR", Code.Internal],
  0xa: ["CONNECT_ERROR", Code.Internal],
  0xb: ["ENHANCE_YOUR_CALM", Code.ResourceExhausted],
  0xc: ["INADEQUATE_SECURITY", Code.PermissionDenied],
  0xd: ["HTTP_1_1_REQUIRED", Code.PermissionDenied],
};

function errorFromRstCode(rstCode: number): ConnectError | undefined {
  const entry = rstCodes[rstCode];
  return entry && new ConnectError(`http/2 stream closed with error code ${entry[0]} (0x${rstCode.toString(16)})`, entry[1]);
}
