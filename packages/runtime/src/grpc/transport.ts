import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

export interface ServiceTransportOptions {
  interceptors?: Interceptor[];
}

export function createServiceTransport(baseUrl: string, options: ServiceTransportOptions = {}): Transport {
  return createGrpcTransport({
    baseUrl,
    useBinaryFormat: true,
    interceptors: options.interceptors ?? [],
  });
}
