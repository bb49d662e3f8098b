import { SERVICE_CATALOG, type ServiceName } from "./catalog.js";

// Environment is parsed once at start; a bad value stops the process with a
// message naming the variable, rather than failing later mid-request.

export class ConfigError extends Error {}

/** Where settings are read from: the process's environment, or a given one (the embedded launcher, tests). */
export type Env = Readonly<Record<string, string | undefined>>;

export function envString(name: string, fallback?: string, env: Env = process.env): string {
  const value = env[name];
  if (value !== undefined && value !== "") return value;
  if (fallback !== undefined) return fallback;
  throw new ConfigError(`environment variable ${name} is required`);
}

export function envOptional(name: string, env: Env = process.env): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

/** An "on"/"off" switch (RATE_LIMIT, EMAIL_STATUS_BATCHES, …), case-insensitive; unset or empty: `fallback`. */
export function switchSetting(env: Env, name: string, fallback: "on" | "off" = "on"): boolean {
  const value = (envOptional(name, env) ?? fallback).toLowerCase();
  if (value !== "on" && value !== "off") throw new ConfigError(`environment variable ${name} must be "on" or "off", got "${env[name]}"`);
  return value === "on";
}

export function envInt(
  name: string,
  fallback: number,
  { min = 0, max = Number.MAX_SAFE_INTEGER } = {},
  env: Env = process.env,
): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`environment variable ${name} must be an integer in ${min}..${max}, got "${raw}"`);
  }
  return value;
}

/** The settings every gRPC service reads the same way. */
export interface ServiceEnv {
  /** GRPC_HOST: interface to listen on (0.0.0.0 in containers). */
  grpcHost: string;
  /** GRPC_PORT. */
  grpcPort: number;
  /** MONGO_URL: unset means the embedded file store under DATA_DIR. */
  mongoUrl: string | undefined;
  /** MONGO_DB: database (or embedded folder) name, default the service's name. */
  mongoDb: string;
  /** DATA_DIR, default ./data. */
  dataDir: string;
  /** KAFKA_BROKERS: unset means the in-process bus. */
  kafkaBrokers: string | undefined;
  /** METRICS_PORT: Prometheus metrics at /metrics (default: the catalog's port of the service). */
  metricsPort: number;
  /** METRICS_HOST: interface of the metrics port, default GRPC_HOST. */
  metricsHost: string;
}

export function loadServiceEnv(service: ServiceName, env: Env = process.env): ServiceEnv {
  return {
    grpcHost: envString("GRPC_HOST", "127.0.0.1", env),
    grpcPort: envInt("GRPC_PORT", SERVICE_CATALOG[service].grpcPort, { min: 0, max: 65535 }, env),
    mongoUrl: envOptional("MONGO_URL", env),
    mongoDb: envString("MONGO_DB", service, env),
    dataDir: envString("DATA_DIR", "./data", env),
    kafkaBrokers: envOptional("KAFKA_BROKERS", env),
    metricsPort: envInt("METRICS_PORT", SERVICE_CATALOG[service].metricsPort, { min: 0, max: 65535 }, env),
    metricsHost: envString("METRICS_HOST", envString("GRPC_HOST", "127.0.0.1", env), env),
  };
}
