// The Helm chart's `components:` (deploy/helm/emailsvc/values.yaml) as far
// as the manifest decides them: each component's ports (with the callers the
// NetworkPolicy admits and that get its `<NAME>_URL`), the listen addresses,
// `secretEnv`, and what its probes ask. The rest of an entry (resources, the
// service's own settings, probe timing) and every comment are the chart's,
// kept as they are. `npm run generate:chart` writes it;
// packages/manifest/test/chart.test.ts and scripts/helm-check.sh fail when the
// committed chart differs.
import { isMap, isScalar, Pair, parseDocument, Scalar, YAMLMap, YAMLSeq, type Document } from "yaml";
import { callersOf, COMPONENT_NAMES, isComponentName, isServiceName, manifestOf, type ComponentName } from "./derive.js";

/** Every container serves /metrics on this port (the Dockerfile EXPOSEs it); side by side on one machine they differ (manifest). */
export const CHART_METRICS_PORT = 9464;

export interface ChartPort {
  port: number;
  env: string;
  appProtocol: "http" | "kubernetes.io/h2c";
  public?: true;
  metrics?: true;
  callers?: ComponentName[];
}

export type ChartProbe = { grpc: { port: number } } | { httpGet: { path: string; port: string } };

/** What the manifest says of one component of the chart. */
export interface ChartComponent {
  ports: Record<string, ChartPort>;
  /** Listen on every interface of the pod: the services' default is 127.0.0.1. */
  env: Record<string, string>;
  secretEnv: string[];
  livenessProbe: ChartProbe;
  readinessProbe: ChartProbe;
}

export function chartComponent(name: ComponentName): ChartComponent {
  const m = manifestOf(name);
  const ports: Record<string, ChartPort> = {};
  const env: Record<string, string> = {};
  let probes: Pick<ChartComponent, "livenessProbe" | "readinessProbe"> | undefined;
  if (m.grpcPort !== undefined && isServiceName(name)) {
    ports.grpc = { port: m.grpcPort, env: "GRPC_PORT", appProtocol: "kubernetes.io/h2c", callers: callersOf(name).map((c) => c.caller) };
    env.GRPC_HOST = "0.0.0.0";
    // Native gRPC probes against grpc.health.v1 (the port must be a number).
    probes = { livenessProbe: { grpc: { port: m.grpcPort } }, readinessProbe: { grpc: { port: m.grpcPort } } };
  }
  for (const [portName, p] of Object.entries(m.public)) {
    ports[portName] = { port: p.port, env: p.portEnv, appProtocol: "http", public: true };
    env[p.hostEnv] = "0.0.0.0";
    if (p.health) {
      probes = { livenessProbe: { httpGet: { path: p.health.live, port: portName } }, readinessProbe: { httpGet: { path: p.health.ready, port: portName } } };
    }
  }
  ports.metrics = { port: CHART_METRICS_PORT, env: "METRICS_PORT", appProtocol: "http", metrics: true };
  if (!probes) throw new Error(`${name}: neither a gRPC port nor a public port with health paths to probe`);
  return { ports, env, secretEnv: [...m.secrets], ...probes };
}

/** Probe timing of a component that has none yet (the chart's operators tune it there). */
const NEW_PROBE_TIMING = {
  livenessProbe: { periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
  readinessProbe: { periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 2 },
} as const;

const FORMAT = { lineWidth: 0, flowCollectionPadding: false } as const;

/**
 * values.yaml with `components:` brought in line with the manifest: a
 * component for each entry (a new one gets `enabled: true`), none for names
 * the manifest does not have, and in each the keys above replaced. Everything
 * else, comments included, stays.
 */
export function renderChartValues(valuesYaml: string): string {
  const doc = parseDocument(valuesYaml);
  if (doc.errors.length > 0) throw new Error(`values.yaml does not parse: ${doc.errors[0]!.message}`);
  let components: unknown = doc.get("components", true);
  if (!isMap(components)) {
    components = new YAMLMap();
    doc.set("components", components);
  }
  const map = components as YAMLMap;
  map.items = map.items.filter((pair) => isComponentName(keyOf(pair)));
  for (const name of COMPONENT_NAMES) {
    let entry: unknown = map.get(name, true);
    if (!isMap(entry)) {
      entry = new YAMLMap();
      (entry as YAMLMap).set("enabled", true);
      // Inside the entry: a comment above a key that follows a nested map would be read back as that map's.
      (entry as YAMLMap).commentBefore = ` ${manifestOf(name).summary}`;
      map.items.push(new Pair(new Scalar(name), entry));
    }
    writeComponent(doc, name, entry as YAMLMap, chartComponent(name));
  }
  return doc.toString(FORMAT);
}

function writeComponent(doc: Document, name: ComponentName, entry: YAMLMap, want: ChartComponent): void {
  const ports = new YAMLMap();
  for (const [portName, port] of Object.entries(want.ports)) {
    const node = new YAMLMap();
    for (const [key, value] of Object.entries(port)) {
      if (key !== "callers") node.set(key, value);
    }
    if (port.callers) {
      const key = new Scalar("callers");
      const reasons = isServiceName(name) ? callersOf(name).map(({ caller, call }) => ` ${caller}: ${call.for}`) : [];
      if (reasons.length > 0) key.commentBefore = reasons.join("\n");
      node.items.push(new Pair(key, flow(doc.createNode(port.callers))));
    }
    ports.set(portName, node);
  }
  setInPlace(entry, "ports", ports);

  let env: unknown = entry.get("env", true);
  if (!isMap(env)) {
    env = new YAMLMap();
    setInPlace(entry, "env", env);
  }
  const envMap = env as YAMLMap;
  // Generated settings first; a value the chart already has keeps its place and style.
  for (const [key, value] of Object.entries(want.env).reverse()) {
    if (envMap.has(key)) envMap.set(key, value);
    else envMap.items.unshift(new Pair(new Scalar(key), quoted(value)));
  }
  // A listen address the manifest no longer asks for (a port it dropped).
  for (const key of ["GRPC_HOST"]) if (!(key in want.env)) envMap.delete(key);

  const secretEnv = flow(doc.createNode(want.secretEnv));
  const optional = Object.entries(manifestOf(name).optionalSecrets);
  // On the line itself: a comment above it would be read back as the previous map's (env).
  if (optional.length > 0) secretEnv.comment = optional.map(([secret, when]) => ` with ${when} also ${secret}`).join("; ");
  setInPlace(entry, "secretEnv", secretEnv);

  for (const probeKey of ["livenessProbe", "readinessProbe"] as const) {
    let probe: unknown = entry.get(probeKey, true);
    if (!isMap(probe)) {
      probe = doc.createNode(NEW_PROBE_TIMING[probeKey]);
      setInPlace(entry, probeKey, probe);
    }
    const probeMap = probe as YAMLMap;
    const [kind, target] = Object.entries(want[probeKey])[0]!;
    for (const other of ["grpc", "httpGet"]) if (other !== kind) probeMap.delete(other);
    if (probeMap.has(kind)) probeMap.set(kind, flow(doc.createNode(target)));
    else probeMap.items.unshift(new Pair(new Scalar(kind), flow(doc.createNode(target))));
  }
}

/** Sets `key` keeping its place (and the comments above it) when present, else appends it. */
function setInPlace(map: YAMLMap, key: string, value: unknown): void {
  const pair = map.items.find((p) => keyOf(p) === key);
  if (pair) pair.value = value;
  else map.items.push(new Pair(new Scalar(key), value));
}

function keyOf(pair: Pair): string {
  return isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
}

function quoted(value: string): Scalar {
  const node = new Scalar(value);
  node.type = Scalar.QUOTE_DOUBLE;
  return node;
}

function flow<T>(node: T): T {
  (node as { flow?: boolean }).flow = true;
  return node;
}
