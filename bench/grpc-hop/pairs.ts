// The servers and clients the benchmark pairs up. Each side comes in three
// kinds: "plain" (connect-node used out of the box), "runtime" (the runtime
// kit's startGrpcServer / createServiceTransport, i.e. with our fixes) and
// "grpc-js" (the baseline). Experimental knobs (`ServerKnobs`, `ClientKnobs`)
// only apply to the plain kinds; they exist to test hypotheses, not to be used.
import * as http2 from "node:http2";
import * as net from "node:net";
import type { AddressInfo, Socket } from "node:net";
import { createClient, type Client } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { SubscriberService, type GetSubscriberResponse } from "@emailsvc/proto";
import { errorInterceptor } from "@emailsvc/errors";
import { createServiceTransport, startGrpcServer } from "@emailsvc/grpc";
import { createLogger, initTelemetry, serverTelemetry } from "@emailsvc/telemetry";
import {
  deserializeResponse,
  getSubscriberPath,
  grpcJsDefinition,
  grpcJsImplementation,
  routes,
  serializeRequest,
  subscriberRequest,
} from "./fixtures.js";

export type Kind = "plain" | "runtime" | "grpc-js";

export interface ServerKnobs {
  /** runtime kind: the telemetry interceptor services install (default true). */
  telemetry?: boolean;
  /** Call socket.setNoDelay(value) on every accepted connection. */
  noDelay?: boolean;
  /** http2.createServer options merged in (settings, windows, ...). */
  http2Options?: http2.ServerOptions;
}

export interface ClientKnobs {
  /** runtime kind: the client telemetry of createServiceTransport (default true). */
  telemetry?: boolean;
  /** Call socket.setNoDelay(value) on the client's connection. */
  noDelay?: boolean;
  /** Extra http2.connect options (settings, windows, ...). */
  http2Options?: http2.ClientSessionOptions;
  /** Number of HTTP/2 sessions to spread calls over (round robin). */
  sessions?: number;
  /** Use the JSON codec instead of binary. */
  json?: boolean;
}

export interface ServerSpec {
  kind: Kind;
  knobs?: ServerKnobs;
}

export interface ClientSpec {
  kind: Kind;
  knobs?: ClientKnobs;
}

export interface StartedServer {
  port: number;
  close(): Promise<void>;
}

export async function startServer(spec: ServerSpec): Promise<StartedServer> {
  switch (spec.kind) {
    case "runtime": {
      // The interceptors startServiceServer installs for every service: the
      // telemetry one (left out for b0) and the error mapping (always there).
      const errors = errorInterceptor(createLogger("bench", "silent"));
      const interceptors = spec.knobs?.telemetry === false ? [errors] : [serverTelemetry(), errors];
      const server = await startGrpcServer({ routes, port: 0, interceptors });
      return { port: server.port, close: () => server.close(1000) };
    }
    case "plain": {
      const knobs = spec.knobs ?? {};
      const handler = connectNodeAdapter({ routes });
      const server = http2.createServer(knobs.http2Options ?? {}, handler);
      const sessions = new Set<http2.ServerHttp2Session>();
      server.on("session", (s) => {
        sessions.add(s);
        s.once("close", () => sessions.delete(s));
      });
      if (knobs.noDelay !== undefined) {
        const value = knobs.noDelay;
        server.on("connection", (socket: Socket) => socket.setNoDelay(value));
      }
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return {
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            for (const s of sessions) s.destroy();
          }),
      };
    }
    case "grpc-js": {
      const server = new grpc.Server();
      server.addService(grpcJsDefinition, grpcJsImplementation);
      const port = await new Promise<number>((resolve, reject) =>
        server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
      );
      return {
        port,
        close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
      };
    }
  }
}

export interface Caller {
  /** One unary GetSubscriber call; resolves with the subscriber's id. */
  call(n: number): Promise<string>;
  close(): void;
}

export function createCaller(spec: ClientSpec, port: number): Caller {
  const baseUrl = `http://127.0.0.1:${port}`;
  switch (spec.kind) {
    case "runtime": {
      const client = createClient(SubscriberService, createServiceTransport(baseUrl, { telemetry: spec.knobs?.telemetry !== false }));
      return connectCaller([client], () => undefined);
    }
    case "plain": {
      const knobs = spec.knobs ?? {};
      if (Object.keys(knobs).length === 0) {
        // Exactly what a service gets out of the box.
        return connectCaller([createClient(SubscriberService, createGrpcTransport({ baseUrl }))], () => undefined);
      }
      const managers: Http2SessionManager[] = [];
      const clients: Client<typeof SubscriberService>[] = [];
      for (let i = 0; i < (knobs.sessions ?? 1); i++) {
        const nodeOptions: http2.ClientSessionOptions = { ...(knobs.http2Options ?? {}) };
        if (knobs.noDelay !== undefined) {
          const value = knobs.noDelay;
          nodeOptions.createConnection = (authority: URL) => {
            const socket = net.connect({ host: authority.hostname, port: Number(authority.port) });
            socket.setNoDelay(value);
            return socket;
          };
        }
        const sessionManager = new Http2SessionManager(baseUrl, {}, nodeOptions);
        managers.push(sessionManager);
        clients.push(
          createClient(
            SubscriberService,
            createGrpcTransport({ baseUrl, sessionManager, useBinaryFormat: knobs.json !== true }),
          ),
        );
      }
      return connectCaller(clients, () => managers.forEach((m) => m.abort()));
    }
    case "grpc-js": {
      const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      return {
        call: (n) =>
          new Promise<string>((resolve, reject) => {
            client.makeUnaryRequest<ReturnType<typeof subscriberRequest>, GetSubscriberResponse>(
              getSubscriberPath,
              serializeRequest,
              deserializeResponse,
              subscriberRequest(n),
              (err, res) => (err || !res ? reject(err ?? new Error("no response")) : resolve(res.subscriber?.id ?? "")),
            );
          }),
        close: () => client.close(),
      };
    }
  }
}

function connectCaller(clients: Client<typeof SubscriberService>[], close: () => void): Caller {
  let next = 0;
  return {
    async call(n) {
      const client = clients[next++ % clients.length]!;
      const res = await client.getSubscriber(subscriberRequest(n));
      return res.subscriber?.id ?? "";
    },
    close,
  };
}

/**
 * Tracing as a service sets it up: ids made and propagated, nothing recorded
 * (no OTLP endpoint). With BENCH_TELEMETRY_EXPORT=1 every span is recorded and
 * handed to an exporter that drops it, to see what exporting costs.
 */
export function setUpTelemetry(): void {
  const exporting = process.env.BENCH_TELEMETRY_EXPORT === "1";
  initTelemetry(
    { service: "bench", endpoint: undefined },
    exporting ? { exporter: { export: (_spans, done) => done({ code: 0 }), shutdown: async () => undefined } } : {},
  );
}
