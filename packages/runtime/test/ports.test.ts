import { mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pickPort, unusedPort, type PortClaims } from "../src/listen";

// unusedPort hands out a port that a server binds later. Between the two, no
// other picker on the machine may take it, even when its server lets the port
// go for a moment: each pick is claimed in a shared directory.

describe("picking a port for a server that binds it later", () => {
  let dir: string;
  let claims: PortClaims;
  const servers: Server[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "port-claims-"));
    claims = { dir, holdMs: 60_000 };
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
    rmSync(dir, { recursive: true, force: true });
  });

  /** Three ports of the range below the ephemeral one that are free now (bound and released). */
  async function freeRange(): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      const low = 20_000 + Math.floor(Math.random() * 10_000);
      const bound = await Promise.all([0, 1, 2].map((offset) => bindable(low + offset)));
      if (bound.every(Boolean)) return low;
    }
    throw new Error("no three free ports in a row");
  }

  function bindable(port: number): Promise<boolean> {
    return new Promise((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
  }

  it("never gives a claimed port twice, though nothing is bound to it, and claims each pick", async () => {
    const low = await freeRange();
    const picks: number[] = [];
    for (let i = 0; i < 3; i++) picks.push(await pickPort({ host: "127.0.0.1", low, high: low + 3, claims, attempts: 200 }));
    expect(new Set(picks).size).toBe(3);
    expect(picks.every((port) => port >= low && port < low + 3)).toBe(true);
    expect(readdirSync(dir).map(Number).sort()).toEqual([...picks].sort());

    // The range is all claimed: the kernel's choice, outside it.
    const fallback = await pickPort({ host: "127.0.0.1", low, high: low + 3, claims, attempts: 20 });
    expect(fallback >= low && fallback < low + 3).toBe(false);
  });

  it("takes over a claim older than the hold, and skips a port bound by a server that never claimed it", async () => {
    const low = await freeRange();
    const stale = await pickPort({ host: "127.0.0.1", low, high: low + 1, claims, attempts: 50 });
    expect(stale).toBe(low);
    const long = new Date(Date.now() - 2 * claims.holdMs);
    utimesSync(join(dir, String(low)), long, long);
    expect(await pickPort({ host: "127.0.0.1", low, high: low + 1, claims, attempts: 50 })).toBe(low);

    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(low + 1, "127.0.0.1", resolve));
    const other = await pickPort({ host: "127.0.0.1", low: low + 1, high: low + 2, claims, attempts: 20 });
    expect(other).not.toBe(low + 1);
  });

  it("gives distinct ports to picks made at once", async () => {
    const low = await freeRange();
    const picks = await Promise.all([0, 1, 2].map(() => pickPort({ host: "127.0.0.1", low, high: low + 3, claims, attempts: 200 })));
    expect([...picks].sort()).toEqual([low, low + 1, low + 2]);
  });

  it("picks below the kernel's ephemeral range", async () => {
    const ephemeralStart = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    const port = await unusedPort();
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(ephemeralStart);
  });
});
