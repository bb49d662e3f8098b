// The shape of one service's manifest: plain data, no code. See services.ts
// for the entries and ARCHITECTURE.md, "One service manifest".

/**
 * required: the caller cannot work without the callee; it is started after it
 * (embedded launcher) and, alone, defaults its `<NAME>_URL` to this machine.
 * optional: the caller works without it (its routes answer 503, or the feature
 * is off) and is given its address only when one is configured.
 */
export type CallNeed = "required" | "optional";

export interface Call {
  need: CallNeed;
  /** What it calls the service for, in a few words (the chart's comments, the docs). */
  for: string;
}

/** A port the service serves over plain HTTP to the world (or the cluster's ingress). */
export interface PublicPort {
  /** Its default when the service runs alone. */
  port: number;
  /** The setting its port is read from, e.g. `GATEWAY_PORT`. */
  portEnv: string;
  /** The setting its listen address is read from; the chart sets it to 0.0.0.0. */
  hostEnv: string;
  /**
   * HTTP paths of liveness and readiness on this port. Only for a service
   * without gRPC: the others are probed with grpc.health.v1 on their gRPC port.
   */
  health?: { live: string; ready: string };
}

/** What a deployment must know of one provider. */
export interface ProviderDeclaration {
  /** What it does, one line (the chart's docs and messages). */
  summary: string;
  /** The secret settings it reads when chosen: name → what to put there (the chart's messages). */
  secrets: Readonly<Record<string, string>>;
}

export interface ProviderChoice {
  /** The setting that picks one, e.g. `EMAIL_PROVIDER`. */
  setting: string;
  /** The one used when the setting is unset. */
  default: string;
  options: Readonly<Record<string, ProviderDeclaration>>;
}

export interface ServiceManifest {
  /** What it is, one line. */
  summary: string;
  /** Its gRPC port (GRPC_PORT's default). Absent: it serves no gRPC (the gateway). */
  grpcPort?: number;
  /** METRICS_PORT's default when it runs alone: every process on one machine has its own. */
  metricsPort: number;
  /** Public HTTP ports by name (the chart's port name: a lower-case IANA name of at most 15 characters). */
  public: Readonly<Record<string, PublicPort>>;
  /** The gRPC services it calls, by name. */
  calls: Readonly<Record<string, Call>>;
  /** Event topics (packages/events, TOPICS). A service with none gets no event bus. */
  topics: { produces: readonly string[]; consumes: readonly string[] };
  /** Secret settings it reads in every deployment (the chart's `secretEnv`). */
  secrets: readonly string[];
  /** Secret settings it reads only in some configurations, beside its providers' (`optionalSecretsOf`): name → when. */
  optionalSecrets: Readonly<Record<string, string>>;
  /**
   * Implementations it picks one of by a setting (delivery: its mail
   * providers, EMAIL_PROVIDER). The service's registry has exactly these
   * (its type is keyed by them); the chart accepts exactly these names and
   * asks for each one's secrets (templates/_manifest.tpl, generated).
   */
  providers?: ProviderChoice;
  /**
   * What it keeps. Its database is its name (MONGO_DB overrides it), holding
   * `collections`; `dataDir` lists what it keeps under DATA_DIR when it runs
   * alone on the embedded store (`npm start` shares one bus log, `bus/embedded`).
   */
  data: { collections: readonly string[]; dataDir: readonly string[] };
}
