import type { AddressInfo, Server } from "node:net";

// Binding a server (HTTP/1.1, HTTP/2, metrics) to its port: one place for the
// error-or-listening race and for how a bound host is written in a URL.

/** Listens on `port` (0: any free one) at `host`; resolves with the bound port, rejects on EADDRINUSE and the like. */
export function listen(server: Server, port: number | undefined, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** `host` as it goes into a URL: a wildcard address becomes localhost, an IPv6 literal gets brackets. */
export function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "localhost";
  return host.includes(":") ? `[${host}]` : host;
}
