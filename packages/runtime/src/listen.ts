import { readFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";

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

/**
 * A TCP port at `host` that was free a moment ago, for a server that binds it
 * a little later (its address handed out first). Chosen at random below the
 * kernel's ephemeral range (ip_local_port_range), where neither outgoing
 * connections nor listeners on port 0 are given ports: asked of the kernel
 * (listen on 0), the port would come from that range and could be taken by
 * any connection in the meantime. Only another caller choosing the same
 * number at once could take it. Falls back to the kernel's choice when no
 * port of the range is free.
 */
export async function unusedPort(host = "127.0.0.1"): Promise<number> {
  const low = 10_000;
  const high = Math.max(low + 1_000, ephemeralStart() - 1);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if ((await probe(port, host)) !== undefined) return port;
  }
  const port = await probe(0, host);
  if (port === undefined) throw new Error(`no free TCP port at ${host}`);
  return port;
}

/** Binds and releases `port` (0: the kernel's choice); the bound port, or undefined when it is taken. */
function probe(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(undefined));
    server.listen(port, host, () => {
      const bound = (server.address() as AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

/** The first port of Linux's ephemeral range; its default (32768) elsewhere. */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 11_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}
