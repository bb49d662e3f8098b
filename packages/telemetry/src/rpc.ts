import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { HEADER_ACCOUNT } from "@emailsvc/tenancy";
import { counter, histogram } from "./metrics.js";
import {
  context,
  extractTraceContext,
  injectTraceContext,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingEnabled,
  TRACEPARENT,
  TRACESTATE,
  type Span,
} from "./tracing.js";

// Spans and metrics of every internal gRPC call, as interceptors: both the
// runtime's unary fast paths and connect-node's generic path run them, so no
// call goes unseen. Installed by startServiceServer and createServiceTransport.
// Metrics are always on; spans only while tracing is (tracing.ts).

const codeNames = new Map<Code | undefined, string>();
const codeName = (code: Code | undefined): string => {
  let name = codeNames.get(code);
  if (name === undefined) {
    name = code === undefined ? "ok" : Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
    codeNames.set(code, name);
  }
  return name;
};

/**
 * The metrics of one method, made once per method descriptor (a stable
 * object): no label object or key is built per call.
 */
function perMethod<T>(make: (service: string, method: string) => T): (method: DescMethod) => T {
  const cache = new WeakMap<DescMethod, T>();
  return (method) => {
    let entry = cache.get(method);
    if (entry === undefined) {
      entry = make(method.parent.typeName, method.name);
      cache.set(method, entry);
    }
    return entry;
  };
}

/** A child per code, made on first use. */
function byCode<T>(make: (code: string) => T): (code: Code | undefined) => T {
  const cache = new Map<Code | undefined, T>();
  return (code) => {
    let child = cache.get(code);
    if (child === undefined) {
      child = make(codeName(code));
      cache.set(code, child);
    }
    return child;
  };
}

// performance.now(), not hrtime.bigint(): no BigInt to allocate on every call.
const seconds = (since: number): number => (performance.now() - since) / 1000;

/**
 * Records a call's outcome when `call` settles, without an async frame of its
 * own (one promise, not three: this runs on every internal call).
 */
function settled<T>(call: Promise<T>, record: (code: Code | undefined) => void): Promise<T> {
  return call.then(
    (result) => {
      record(undefined);
      return result;
    },
    (err: unknown) => {
      record(ConnectError.from(err).code);
      throw err;
    },
  );
}

/** Server side: continues the caller's trace, times the call, counts it by code. */
export function serverTelemetry(): Interceptor {
  const requests = counter("rpc_server_requests_total", "gRPC calls served, by method and code.", ["rpc_service", "rpc_method", "code"]);
  const duration = histogram("rpc_server_duration_seconds", "Time to serve a gRPC call.", ["rpc_service", "rpc_method"]);
  const metricsOf = perMethod((rpc_service, rpc_method) => ({
    requests: byCode((code) => requests.labels({ rpc_service, rpc_method, code })),
    duration: duration.labels({ rpc_service, rpc_method }),
  }));
  return (next) => (req) => {
    const started = performance.now();
    const metrics = metricsOf(req.method);
    let span: Span | undefined;
    let call: Promise<Awaited<ReturnType<typeof next>>>;
    if (!tracingEnabled()) {
      call = next(req);
    } else {
      const service = req.service.typeName;
      const method = req.method.name;
      const parent = extractTraceContext((name) => req.header.get(name));
      const account = req.header.get(HEADER_ACCOUNT);
      span = tracer().startSpan(
        `${service}/${method}`,
        {
          kind: SpanKind.SERVER,
          attributes: { "rpc.system": "grpc", "rpc.service": service, "rpc.method": method, ...(account ? { "emailsvc.account_id": account } : {}) },
        },
        parent,
      );
      const active = span;
      call = context.with(trace.setSpan(parent, active), () => next(req));
    }
    return settled(call, (code) => {
      if (span) finish(span, code);
      metrics.requests(code).inc();
      metrics.duration.observe(seconds(started));
    });
  };
}

/** Client side: a span per call, its context in the call's `traceparent` header. */
export function clientTelemetry(): Interceptor {
  const duration = histogram("rpc_client_duration_seconds", "Time of a gRPC call, as the caller sees it, by method and code.", [
    "rpc_service",
    "rpc_method",
    "code",
  ]);
  const durationOf = perMethod((rpc_service, rpc_method) => byCode((code) => duration.labels({ rpc_service, rpc_method, code })));
  return (next) => (req) => {
    const started = performance.now();
    const durations = durationOf(req.method);
    let span: Span | undefined;
    if (tracingEnabled()) {
      const parent = context.active();
      span = tracer().startSpan(
        `${req.service.typeName}/${req.method.name}`,
        { kind: SpanKind.CLIENT, attributes: { "rpc.system": "grpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name } },
        parent,
      );
      const carrier = injectTraceContext(trace.setSpan(parent, span));
      if (carrier[TRACEPARENT]) req.header.set(TRACEPARENT, carrier[TRACEPARENT]);
      if (carrier[TRACESTATE]) req.header.set(TRACESTATE, carrier[TRACESTATE]);
    }
    return settled(next(req), (code) => {
      if (span) finish(span, code);
      durations(code).observe(seconds(started));
    });
  };
}

function finish(span: Span, code: Code | undefined): void {
  span.setAttribute("rpc.grpc.status_code", code ?? 0);
  if (code !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: codeName(code) });
  span.end();
}
