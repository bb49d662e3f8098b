import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { HEADER_ACCOUNT } from "../context.js";
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

const seconds = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e9;

/** Server side: continues the caller's trace, times the call, counts it by code. */
export function serverTelemetry(): Interceptor {
  const requests = counter("rpc_server_requests_total", "gRPC calls served, by method and code.", ["rpc_service", "rpc_method", "code"]);
  const duration = histogram("rpc_server_duration_seconds", "Time to serve a gRPC call.", ["rpc_service", "rpc_method"]);
  const metricsOf = perMethod((rpc_service, rpc_method) => ({
    requests: byCode((code) => requests.labels({ rpc_service, rpc_method, code })),
    duration: duration.labels({ rpc_service, rpc_method }),
  }));
  return (next) => async (req) => {
    const service = req.service.typeName;
    const method = req.method.name;
    const started = process.hrtime.bigint();
    let code: Code | undefined;
    let span: Span | undefined;
    try {
      if (!tracingEnabled()) return await next(req);
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
      return await context.with(trace.setSpan(parent, span), () => next(req));
    } catch (err) {
      code = ConnectError.from(err).code;
      throw err;
    } finally {
      if (span) finish(span, code);
      const metrics = metricsOf(req.method);
      metrics.requests(code).inc();
      metrics.duration.observe(seconds(started));
    }
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
  return (next) => async (req) => {
    const service = req.service.typeName;
    const method = req.method.name;
    const started = process.hrtime.bigint();
    let code: Code | undefined;
    let span: Span | undefined;
    try {
      if (tracingEnabled()) {
        const parent = context.active();
        span = tracer().startSpan(
          `${service}/${method}`,
          { kind: SpanKind.CLIENT, attributes: { "rpc.system": "grpc", "rpc.service": service, "rpc.method": method } },
          parent,
        );
        const carrier = injectTraceContext(trace.setSpan(parent, span));
        if (carrier[TRACEPARENT]) req.header.set(TRACEPARENT, carrier[TRACEPARENT]);
        if (carrier[TRACESTATE]) req.header.set(TRACESTATE, carrier[TRACESTATE]);
      }
      return await next(req);
    } catch (err) {
      code = ConnectError.from(err).code;
      throw err;
    } finally {
      if (span) finish(span, code);
      durationOf(req.method)(code).observe(seconds(started));
    }
  };
}

function finish(span: Span, code: Code | undefined): void {
  span.setAttribute("rpc.grpc.status_code", code ?? 0);
  if (code !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: codeName(code) });
  span.end();
}
