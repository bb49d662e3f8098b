import * as http from "node:http";
import { listen, urlHost } from "@emailsvc/runtime";
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from "prom-client";

// Prometheus metrics of the process: one registry, served on the service's
// own port (METRICS_PORT) at /metrics. Labels are routes, methods, codes,
// services, topics, statuses: never ids of tenants or people, which would
// make a series per customer (and carry data that does not belong there).

export const registry = new Registry();
let defaultsCollected = false;

/** Node's own metrics (event loop lag, heap, GC, handles), once per process. */
export function collectProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ register: registry });
}

/** Seconds buckets from 0.5 ms to 10 s: internal calls are sub-millisecond, sends take seconds. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A metric registered once per process (the embedded mode starts every service in one). */
function once<T>(name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

export function counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return once(name, () => new Counter({ name, help, labelNames, registers: [registry] }));
}

export function histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets = LATENCY_BUCKETS): Histogram<L> {
  return once(name, () => new Histogram({ name, help, labelNames, buckets, registers: [registry] }));
}

const gaugeSources = new Map<string, Set<unknown>>();

/**
 * A gauge whose values are read when Prometheus scrapes (`collect` sets
 * them), e.g. an outbox backlog counted from the store. Several sources may
 * feed one gauge (one per service in the embedded mode): each is called.
 */
export function observedGauge<L extends string>(
  name: string,
  help: string,
  labelNames: readonly L[],
): { gauge: Gauge<L>; observe(source: (gauge: Gauge<L>) => Promise<void> | void): () => void } {
  let sources = gaugeSources.get(name) as Set<(gauge: Gauge<L>) => Promise<void> | void> | undefined;
  if (!sources) {
    sources = new Set();
    gaugeSources.set(name, sources as Set<unknown>);
  }
  const feeding = sources;
  const gauge = once(
    name,
    () =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers: [registry],
        async collect() {
          // Only what the sources say now: a label set that is gone disappears.
          this.reset();
          await Promise.all([...feeding].map((source) => Promise.resolve(source(this)).catch(() => undefined)));
        },
      }),
  );
  return {
    gauge,
    observe(source) {
      feeding.add(source);
      return () => feeding.delete(source);
    },
  };
}

/** Metrics of this thread's registry, as another thread's metrics server merges them (addMetricsSource). */
export type MetricsSnapshot = Array<MetricObjectWithValues<MetricValue<string>>>;

export function metricsSnapshot(): Promise<MetricsSnapshot> {
  return registry.getMetricsAsJSON() as Promise<MetricsSnapshot>;
}

/**
 * Registries of other threads of this process (services `npm start` runs in
 * worker threads), served with this one's: a scrape sees the whole process.
 */
const otherThreads = new Set<() => Promise<MetricsSnapshot>>();

/** Adds a thread's metrics to what /metrics serves; returns its removal. */
export function addMetricsSource(source: () => Promise<MetricsSnapshot>): () => void {
  otherThreads.add(source);
  return () => otherThreads.delete(source);
}

async function processMetrics(): Promise<string> {
  if (otherThreads.size === 0) return registry.metrics();
  // Counters and histograms of one name from several threads add up (prom-client's aggregation, meant for cluster workers).
  const snapshots = await Promise.all([metricsSnapshot(), ...[...otherThreads].map((source) => source().catch(() => [] as MetricsSnapshot))]);
  return AggregatorRegistry.aggregate(snapshots).metrics();
}

export interface MetricsServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

/** Serves GET /metrics (text format) on its own port; 0 picks a free one. */
export async function startMetricsServer(options: { port: number; host?: string }): Promise<MetricsServer> {
  collectProcessMetrics();
  const server = http.createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("only GET /metrics here\n");
      return;
    }
    processMetrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
      () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics failed\n"),
    );
  });
  const host = options.host ?? "127.0.0.1";
  const port = await listen(server, options.port, host);
  return {
    port,
    url: `http://${urlHost(host)}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
