import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type * as OtlpHttp from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TracerProvider, type SpanExporter } from "@opentelemetry/sdk-trace";
import { envOptional, type Env } from "@emailsvc/runtime";

// Traces of the platform (OpenTelemetry). W3C trace context travels from the
// REST request through every gRPC hop (the runtime's fast paths included: the
// spans are made by interceptors, which both paths run), through the event bus
// (a `traceparent` header on each event, kept in the outbox until published)
// to the provider hand-off.
//
// Only with OTEL_EXPORTER_OTLP_ENDPOINT set is anything of this switched on:
// the context manager, the propagator and a tracer provider that records
// and exports (OTLP over HTTP, JSON). Off, every call below is the
// OpenTelemetry API's no-op: on Node 20 the context manager alone
// (AsyncLocalStorage, i.e. promise hooks on every promise of the process)
// would cost a quarter of a gRPC hop (bench/README.md, "gRPC hop"), which is
// not worth paying for spans nobody receives. Log lines carry the trace id
// whenever tracing is on.
//
// Spans carry ids (tenant account, subscriber, email, template), codes and
// routes: never an address, metadata, variables or a body.

export const TRACER_NAME = "emailsvc";

export interface TelemetrySettings {
  /** service.name of the resource: the service's name, or `emailsvc` for the embedded process. */
  service: string;
  /** OTEL_EXPORTER_OTLP_ENDPOINT (base URL; `/v1/traces` is added) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (full URL). */
  endpoint: string | undefined;
}

export function telemetrySettings(service: string, env: Env = process.env): TelemetrySettings {
  const tracesEndpoint = envOptional("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env);
  const base = envOptional("OTEL_EXPORTER_OTLP_ENDPOINT", env);
  return {
    service: envOptional("OTEL_SERVICE_NAME", env) ?? service,
    endpoint: tracesEndpoint ?? (base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined),
  };
}

let provider: TracerProvider | undefined;
let manager: AsyncLocalStorageContextManager | undefined;

/** True while spans are recorded and exported; the instrumentation skips all span work otherwise. */
export function tracingEnabled(): boolean {
  return provider !== undefined;
}

export interface Telemetry {
  /** True when spans are recorded and exported. */
  exporting: boolean;
  /** Exports what is buffered and stops; called last on shutdown. */
  shutdown(): Promise<void>;
}

/**
 * The OTLP exporter, loaded only when an endpoint is set: tracing is off by
 * default, and the exporter's modules cost each thread that loads them a few
 * MB of heap and code.
 */
function otlpHttp(): typeof OtlpHttp {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (above)
  return require("@opentelemetry/exporter-trace-otlp-http") as typeof OtlpHttp;
}

/**
 * Sets up tracing for this process, once: the first call with an endpoint (or
 * an exporter, in tests) switches it on; without either it stays off. The
 * embedded launcher calls it before it starts any service.
 */
export function initTelemetry(settings: TelemetrySettings, options: { exporter?: SpanExporter } = {}): Telemetry {
  const exporter = options.exporter ?? (settings.endpoint ? new (otlpHttp().OTLPTraceExporter)({ url: settings.endpoint }) : undefined);
  if (!provider && exporter) {
    manager = new AsyncLocalStorageContextManager();
    manager.enable();
    context.setGlobalContextManager(manager);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    provider = new TracerProvider({
      resource: resourceFromAttributes({ "service.name": settings.service }),
      // Follow the caller's decision; a trace that starts here is sampled.
      sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
      spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })],
    });
    trace.setGlobalTracerProvider(provider);
  }
  const current = provider;
  return {
    exporting: current !== undefined,
    shutdown: async () => {
      if (!current) return;
      await current.shutdown();
      if (provider === current) {
        provider = undefined;
        trace.disable();
        propagation.disable();
        context.disable();
        manager = undefined;
      }
    },
  };
}

/** The platform's tracer (a no-op one until initTelemetry, e.g. in unit tests). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** The trace and span id of the active span, for log lines; undefined outside any. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  if (!provider) return undefined;
  const span = trace.getActiveSpan();
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** Carrier names of W3C trace context. */
export const TRACEPARENT = "traceparent";
export const TRACESTATE = "tracestate";

/** The active context as `traceparent` (and `tracestate`) entries, for headers of a call or an event. */
export function injectTraceContext(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** A context continuing the trace a carrier (request headers, event headers) names; the root context when none. */
export function extractTraceContext(get: (name: string) => string | undefined | null): Context {
  const traceparent = get(TRACEPARENT);
  if (!traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent, ...(get(TRACESTATE) ? { tracestate: get(TRACESTATE)! } : {}) });
}

/**
 * Runs `fn` in a new span (a child of `parent`, default the active context),
 * ends it, and records an exception's type as its status (never its message:
 * messages may hold data).
 */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes ?? {} }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : "error" });
    throw err;
  } finally {
    span.end();
  }
}

export { SpanKind, SpanStatusCode, context, trace, type Span, type Context };
