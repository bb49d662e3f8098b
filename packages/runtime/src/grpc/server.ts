import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

export interface GrpcServerOptions {
  routes: (router: ConnectRouter) => void;
  port: number;
  host?: string;
  interceptors?: Interceptor[];
}

export interface RunningGrpcServer {
  port: number;
  url: string;
  close(graceMs?: number): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const host = options.host ?? "127.0.0.1";
  const handler = connectNodeAdapter({
    routes: options.routes,
    interceptors: options.interceptors ?? [],
    grpc: true,
    connect: true,
    grpcWeb: false,
  });
  const server = http2.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
