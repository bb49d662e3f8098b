import { closeSync, mkdirSync, openSync, readFileSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
 * any connection in the meantime. Falls back to the kernel's choice when no
 * port of the range is free.
 *
 * Between the pick and the bind, only another picker could take the port: one
 * that chose the same number, or one whose server let its port go for a moment
 * (a restart on the same address) while this one probed it. So a pick is
 * claimed, for every process of this machine, by a file named after the port
 * in a shared directory (created exclusively), and no picker takes a port
 * claimed in the last half hour (CI saw EADDRINUSE on ports picked while
 * suites ran side by side). Where the directory cannot be written the pick
 * goes unclaimed, as before.
 */
export async function unusedPort(host = "127.0.0.1"): Promise<number> {
  return pickPort({ host, low: 10_000, high: Math.max(11_000, ephemeralStart() - 1), claims: PORT_CLAIMS });
}

/** Where picks are claimed, and for how long a claim holds. */
export interface PortClaims {
  readonly dir: string;
  readonly holdMs: number;
}

const PORT_CLAIMS: PortClaims = { dir: join(tmpdir(), "emailsvc-port-claims"), holdMs: 30 * 60_000 };

/** unusedPort's pick from [low, high), claimed in `claims`; exported for its test. */
export async function pickPort(options: { host: string; low: number; high: number; claims: PortClaims; attempts?: number }): Promise<number> {
  const { host, low, high, claims } = options;
  const claiming = ensureDir(claims.dir);
  for (let attempt = 0; attempt < (options.attempts ?? 50); attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (claiming && !claim(claims, port)) continue;
    if ((await probe(port, host)) !== undefined) return port;
  }
  const port = await probe(0, host);
  if (port === undefined) throw new Error(`no free TCP port at ${host}`);
  return port;
}

function ensureDir(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true });
    return true;
  } catch {
    return false;
  }
}

/** Claims `port`: a new file, or a claim older than the hold taken over (its time renewed). */
function claim(claims: PortClaims, port: number): boolean {
  const file = join(claims.dir, String(port));
  try {
    closeSync(openSync(file, "wx"));
    return true;
  } catch (error) {
    // Not writable (another user's directory, a read-only disk): the pick goes unclaimed.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") return true;
  }
  try {
    if (Date.now() - statSync(file).mtimeMs < claims.holdMs) return false;
    // Two pickers may take over the same stale claim at once; the probe still
    // stands between them and a port that is bound, as without claims.
    const now = new Date();
    utimesSync(file, now, now);
    return true;
  } catch {
    return false;
  }
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
