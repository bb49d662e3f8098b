// Messages between the main thread and a service thread (service-thread.ts).
import type { MessagePort } from "node:worker_threads";
import type { Env, ServiceName } from "@emailsvc/runtime";
import type { MetricsSnapshot } from "@emailsvc/telemetry";

/** What a service thread starts with (workerData). */
export interface ThreadData {
  name: ServiceName;
  dataDir: string;
  dbName: string;
  mongoUrl: string | undefined;
  kafkaBrokers: string | undefined;
  /** The process's in-process bus, served by the main thread; unset with Kafka. */
  busPort: MessagePort | undefined;
  /** gRPC port; 0 picks a free one (the launcher may have reserved one for its callers). */
  port: number;
  urls: Partial<Record<ServiceName, string>>;
  env: Env;
}

export type ToThread = { kind: "close" } | { kind: "metrics"; id: number };

export type FromThread =
  | { kind: "started"; url: string; publicUrl: string | undefined }
  | { kind: "failed"; error: string }
  | { kind: "closed" }
  | { kind: "metrics"; id: number; snapshot: MetricsSnapshot };
