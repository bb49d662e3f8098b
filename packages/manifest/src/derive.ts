import { SERVICES } from "./services.js";
import type { Call, CallNeed, ServiceManifest } from "./types.js";

type Services = typeof SERVICES;

/** Every deployable: the gateway and the gRPC services (Helm components, processes). */
export type ComponentName = keyof Services;

/** A gRPC service: one with a `grpcPort`, which others call by its `<NAME>_URL`. */
export type ServiceName = { [K in ComponentName]: Services[K] extends { grpcPort: number } ? K : never }[ComponentName];

// A call to something that is no gRPC service of the manifest does not compile.
type UnknownCallee = { [K in ComponentName]: Exclude<keyof Services[K]["calls"], ServiceName> }[ComponentName];
const callsNameServices: [UnknownCallee] extends [never] ? true : UnknownCallee = true;
void callsNameServices;

/** In the manifest's order. */
export const COMPONENT_NAMES = Object.keys(SERVICES) as ComponentName[];

/** The gRPC services, in the manifest's order. */
export const SERVICE_NAMES = COMPONENT_NAMES.filter((name): name is ServiceName => grpcPortOf(name) !== undefined);

export function manifestOf(name: ComponentName): ServiceManifest {
  return SERVICES[name];
}

export function isComponentName(name: string): name is ComponentName {
  return Object.prototype.hasOwnProperty.call(SERVICES, name);
}

export function isServiceName(name: string): name is ServiceName {
  return isComponentName(name) && grpcPortOf(name) !== undefined;
}

function grpcPortOf(name: ComponentName): number | undefined {
  return (SERVICES[name] as ServiceManifest).grpcPort;
}

/** The setting that says where a gRPC service is reached, e.g. `SUBSCRIBERS_URL`. */
export function serviceUrlVariable(name: ServiceName): string {
  return `${name.toUpperCase()}_URL`;
}

/** The services `name` calls, with how much it needs each. */
export function callsOf(name: ComponentName): Partial<Record<ServiceName, CallNeed>> {
  return Object.fromEntries(Object.entries(manifestOf(name).calls).map(([callee, call]) => [callee, call.need]));
}

/** Who calls `name`, in the manifest's order, with what for. */
export function callersOf(name: ServiceName): Array<{ caller: ComponentName; call: Call }> {
  return COMPONENT_NAMES.flatMap((caller) => {
    const call = manifestOf(caller).calls[name];
    return call ? [{ caller, call }] : [];
  });
}

/** A mail provider of delivery's registry, by its EMAIL_PROVIDER name. */
export type MailProviderName = keyof Services["delivery"]["providers"]["options"];

/**
 * The secret settings `name` reads only in some configurations: its
 * `optionalSecrets`, and each of its providers' secrets, read when that
 * provider is chosen (name → when, e.g. `SMTP_URL` → `EMAIL_PROVIDER=smtp`).
 */
export function optionalSecretsOf(name: ComponentName): Record<string, string> {
  const m = manifestOf(name);
  return { ...m.optionalSecrets, ...providerSecrets(m) };
}

function providerSecrets(m: ServiceManifest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [provider, declaration] of Object.entries(m.providers?.options ?? {})) {
    for (const secret of Object.keys(declaration.secrets)) out[secret] = out[secret] ? `${out[secret]} or ${provider}` : `${m.providers!.setting}=${provider}`;
  }
  return out;
}

/** A topic `name` produces, as its entry lists it (e.g. `ProducedTopic<"delivery">`). */
export type ProducedTopic<N extends ComponentName> = Services[N]["topics"]["produces"][number];
/** A topic `name` consumes, as its entry lists it. */
export type ConsumedTopic<N extends ComponentName> = Services[N]["topics"]["consumes"][number];
/** Any topic some entry names. */
export type ManifestTopic = { [N in ComponentName]: ProducedTopic<N> | ConsumedTopic<N> }[ComponentName];

/**
 * Every topic `name` produces or consumes, each once, in the entry's order:
 * what the service makes sure exists at start. The services take their topic
 * lists from here; the entry is the one list.
 */
export function topicsOf<N extends ComponentName>(name: N): Array<ProducedTopic<N> | ConsumedTopic<N>> {
  const { produces, consumes } = manifestOf(name).topics;
  return [...new Set([...produces, ...consumes])] as Array<ProducedTopic<N> | ConsumedTopic<N>>;
}

/** A service with topics gets the event bus; one without gets none. */
export function usesBus(name: ComponentName): boolean {
  const { produces, consumes } = manifestOf(name).topics;
  return produces.length + consumes.length > 0;
}

/**
 * The gRPC services in an order where each one starts after every service it
 * calls as `required` (manifest order otherwise). Optional calls do not order
 * the start: delivery calls the portal optionally and the portal calls
 * delivery as required, so the launcher gives such a caller the callee's
 * address before the callee listens.
 */
export function startOrder(): ServiceName[] {
  return requiredCallOrder(SERVICES, SERVICE_NAMES) as ServiceName[];
}

/** `names` ordered so that each comes after what it calls as required; throws naming a cycle. */
function requiredCallOrder(services: Readonly<Record<string, ServiceManifest>>, names: readonly string[]): string[] {
  const order: string[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (name: string, path: readonly string[]): void => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") throw new Error(`services call each other as required in a cycle: ${[...path, name].join(" -> ")}`);
    state.set(name, "visiting");
    for (const [callee, call] of Object.entries(services[name]?.calls ?? {})) {
      if (call.need === "required" && services[callee]) visit(callee, [...path, name]);
    }
    state.set(name, "done");
    order.push(name);
  };
  for (const name of names) visit(name, []);
  return order;
}

const PORT_NAME = /^[a-z]([a-z0-9-]{0,13}[a-z0-9])?$/;
const COMPONENT = /^[a-z]([a-z0-9-]{0,18}[a-z0-9])?$/;
const ENV_NAME = /^[A-Z][A-Z0-9_]*$/;
const TOPIC = /^[a-z]+(\.[a-z_]+)+$/;
const COLLECTION = /^[a-z][a-z0-9_]*$/;

/**
 * What is wrong with a set of manifests, as sentences naming the entry
 * (empty: nothing). The types catch most of it; this catches the rest:
 * ports used twice, calls of itself, cycles of required calls, malformed names.
 */
export function manifestProblems(services: Readonly<Record<string, ServiceManifest>> = SERVICES): string[] {
  const problems: string[] = [];
  const ports = new Map<number, string>();
  const port = (value: number, what: string): void => {
    if (!Number.isInteger(value) || value < 1 || value > 65535) problems.push(`${what}: ${value} is no port`);
    const other = ports.get(value);
    if (other) problems.push(`${what}: port ${value} is also ${other}`);
    ports.set(value, what);
  };
  for (const [name, m] of Object.entries(services)) {
    if (!COMPONENT.test(name)) problems.push(`${name}: a name is a lower-case DNS label of at most 20 characters`);
    if (m.grpcPort !== undefined) port(m.grpcPort, `${name}.grpcPort`);
    port(m.metricsPort, `${name}.metricsPort`);
    for (const [portName, p] of Object.entries(m.public)) {
      if (!PORT_NAME.test(portName) || portName === "grpc" || portName === "metrics") {
        problems.push(`${name}.public.${portName}: a port name is a lower-case IANA name of at most 15 characters, not grpc or metrics`);
      }
      port(p.port, `${name}.public.${portName}`);
      for (const env of [p.portEnv, p.hostEnv]) if (!ENV_NAME.test(env)) problems.push(`${name}.public.${portName}: ${env} is no setting name`);
    }
    const health = Object.values(m.public).filter((p) => p.health);
    if (m.grpcPort === undefined ? health.length !== 1 : health.length !== 0) {
      problems.push(`${name}: probed on ${m.grpcPort === undefined ? "exactly one public port with health paths" : "its gRPC port; no public port has health paths"}`);
    }
    for (const callee of Object.keys(m.calls)) {
      if (callee === name) problems.push(`${name}.calls: it calls itself`);
      else if (services[callee]?.grpcPort === undefined) problems.push(`${name}.calls.${callee}: no gRPC service of that name`);
    }
    for (const topic of [...m.topics.produces, ...m.topics.consumes]) {
      if (!TOPIC.test(topic)) problems.push(`${name}.topics: "${topic}" is no topic name`);
    }
    for (const list of [m.topics.produces, m.topics.consumes, m.secrets, m.data.collections, m.data.dataDir]) {
      if (new Set(list).size !== list.length) problems.push(`${name}: a name is listed twice in [${list.join(", ")}]`);
    }
    const optional = { ...m.optionalSecrets, ...providerSecrets(m) };
    for (const secret of [...m.secrets, ...Object.keys(optional)]) {
      if (!ENV_NAME.test(secret)) problems.push(`${name}.secrets: ${secret} is no setting name`);
    }
    for (const secret of Object.keys(optional)) {
      if (m.secrets.includes(secret)) problems.push(`${name}: ${secret} is both a secret and an optional one`);
    }
    if (m.providers) {
      if (!ENV_NAME.test(m.providers.setting)) problems.push(`${name}.providers: ${m.providers.setting} is no setting name`);
      if (!Object.hasOwn(m.providers.options, m.providers.default)) problems.push(`${name}.providers: the default ${m.providers.default} is none of its options`);
      for (const provider of Object.keys(m.providers.options)) {
        if (!COMPONENT.test(provider)) problems.push(`${name}.providers.${provider}: a provider's name is a lower-case DNS label`);
      }
    }
    for (const collection of m.data.collections) {
      if (!COLLECTION.test(collection)) problems.push(`${name}.data.collections: "${collection}" is no collection name`);
    }
  }
  try {
    requiredCallOrder(services, Object.keys(services));
  } catch (err) {
    problems.push((err as Error).message);
  }
  return problems;
}
