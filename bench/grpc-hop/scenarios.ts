// Which server is paired with which client. `mainScenarios` is the recorded
// run (bench/results/grpc-hop.json, README table); `experiments` test the
// hypotheses about where the time goes (README, "What we found").
import type { ClientSpec, ServerSpec } from "./pairs.js";

export interface Scenario {
  id: string;
  label: string;
  server: ServerSpec;
  client: ClientSpec;
  /** Extra node flags for the server's child process. */
  serverExecArgv?: string[];
}

export const mainScenarios: Scenario[] = [
  { id: "a", label: "connect → connect, out of the box", server: { kind: "plain" }, client: { kind: "plain" } },
  { id: "b", label: "connect → connect, runtime kit (fixed), telemetry as services run it", server: { kind: "runtime" }, client: { kind: "runtime" } },
  {
    id: "b0",
    label: "b without the telemetry interceptors",
    server: { kind: "runtime", knobs: { telemetry: false } },
    client: { kind: "runtime", knobs: { telemetry: false } },
  },
  { id: "c", label: "grpc-js → grpc-js (baseline)", server: { kind: "grpc-js" }, client: { kind: "grpc-js" } },
  { id: "d1", label: "grpc-js client → connect server, out of the box", server: { kind: "plain" }, client: { kind: "grpc-js" } },
  { id: "d2", label: "connect client, out of the box → grpc-js server", server: { kind: "grpc-js" }, client: { kind: "plain" } },
  { id: "d3", label: "grpc-js client → connect server, runtime kit", server: { kind: "runtime" }, client: { kind: "grpc-js" } },
  { id: "d4", label: "connect client, runtime kit → grpc-js server", server: { kind: "grpc-js" }, client: { kind: "runtime" } },
];

const plainServer: ServerSpec = { kind: "plain" };
const plainClient: ClientSpec = { kind: "plain" };

export const experiments: Scenario[] = [
  { id: "a", label: "connect → connect, out of the box", server: plainServer, client: plainClient },
  { id: "c", label: "grpc-js → grpc-js (baseline)", server: { kind: "grpc-js" }, client: { kind: "grpc-js" } },
  {
    id: "nodelay",
    label: "a + setNoDelay(true) on both sides",
    server: { kind: "plain", knobs: { noDelay: true } },
    client: { kind: "plain", knobs: { noDelay: true } },
  },
  {
    id: "nagle",
    label: "a + setNoDelay(false) on both sides (Nagle on)",
    server: { kind: "plain", knobs: { noDelay: false } },
    client: { kind: "plain", knobs: { noDelay: false } },
  },
  {
    id: "pool4",
    label: "a + client spreads calls over 4 HTTP/2 sessions",
    server: plainServer,
    client: { kind: "plain", knobs: { sessions: 4 } },
  },
  {
    id: "window",
    label: "a + 1 MiB stream windows both sides",
    server: { kind: "plain", knobs: { http2Options: { settings: { initialWindowSize: 1 << 20 } } } },
    client: { kind: "plain", knobs: { http2Options: { settings: { initialWindowSize: 1 << 20 } } } },
  },
  { id: "json", label: "a + JSON codec instead of binary", server: plainServer, client: { kind: "plain", knobs: { json: true } } },
  {
    id: "semi",
    label: "a + server with --max-semi-space-size=64 (bigger young generation)",
    server: plainServer,
    client: plainClient,
    serverExecArgv: ["--max-semi-space-size=64"],
  },
  { id: "rt-srv", label: "server fix only: connect client out of the box → runtime server", server: { kind: "runtime" }, client: plainClient },
  { id: "rt-cli", label: "client fix only: runtime client → connect server out of the box", server: plainServer, client: { kind: "runtime" } },
  { id: "b", label: "both fixes: runtime client → runtime server", server: { kind: "runtime" }, client: { kind: "runtime" } },
];
