import * as http from "node:http";
import type { AddressInfo } from "node:net";

// Receives what an OTLP/HTTP exporter sends (POST /v1/traces, the JSON
// encoding of ExportTraceServiceRequest, as @opentelemetry/exporter-trace-otlp-http
// sends it) and keeps the spans, flattened, for tests to read. It speaks the
// protocol as a collector does: 200 with an empty ExportTraceServiceResponse.

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status: number;
  /** Start and end, in ms since the epoch (fractional). */
  startMs: number;
  endMs: number;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
  status?: { code?: number };
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
}
interface OtlpRequest {
  resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

const valueOf = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue ?? "";

const attributesOf = (list: OtlpAttribute[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Raw request bodies, to check that no personal data was exported at all. */
  readonly bodies: string[] = [];
  private server: http.Server | undefined;

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        if (req.method !== "POST" || req.url !== "/v1/traces" || !String(req.headers["content-type"]).startsWith("application/json")) {
          res.writeHead(415).end();
          return;
        }
        const body = Buffer.concat(chunks).toString("utf8");
        this.bodies.push(body);
        const parsed = JSON.parse(body) as OtlpRequest;
        for (const resourceSpans of parsed.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              this.spans.push({
                service,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? "",
                name: span.name,
                kind: span.kind,
                attributes: attributesOf(span.attributes),
                status: span.status?.code ?? 0,
                startMs: Number(BigInt(span.startTimeUnixNano ?? "0") / 1000n) / 1000,
                endMs: Number(BigInt(span.endTimeUnixNano ?? "0") / 1000n) / 1000,
              });
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
