import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureCachedDir } from "./cache.js";
import { info } from "./log.js";
import { freePort } from "./ports.js";
import { runLogged, startProcess, waitUntilReady, type ManagedProcess } from "./proc.js";

// Haraka (npm `Haraka`), a real MTA, as the relay of the deliverability tests:
// it accepts a message from delivery, meets the next hop's answer, retries a
// temporary failure on its own schedule, and, when a recipient fails for good
// (at once or after its retries), sends a real delivery status notification
// (RFC 3464, multipart/report) to the message's return path, as a relay of
// a mailbox provider would. Installed once into the cache (its own
// node_modules, outside the repository); each start gets an instance
// directory of its own.
//
// The next hop is chosen by the recipient's domain (`routes`), not by MX
// lookups (a plugin of ours answers Haraka's get_mx hook), so that a test can
// send the recipients to an SmtpSink and the bounces of its return-path
// domain to the platform's own receiver, all on loopback.

export const HARAKA_VERSION = "3.3.4";

export interface HarakaRoute {
  host?: string;
  port: number;
}

export interface HarakaOptions {
  /**
   * Where mail for each recipient domain goes (lower case), `*` for any other
   * domain. A DSN goes to the return path's domain like any other mail.
   */
  routes: Record<string, HarakaRoute>;
  /**
   * Haraka's retry schedule after a temporary failure (its outbound.ini
   * `temp_fail_intervals`, e.g. `5s,10s`, each at least 5 s; `none` gives up at the first): once
   * it is used up, the recipient fails and a DSN goes out. Default `1s,1s`.
   */
  tempFailIntervals?: string;
  /** The MTA's own host name (its Reporting-MTA in DSNs). Default `relay.test`. */
  hostname?: string;
}

export interface HarakaRelay {
  host: string;
  port: number;
  /** `smtp://host:port`, for SMTP_URL. */
  url: string;
  logFile: string;
  stop(): Promise<void>;
}

async function harakaInstall(): Promise<string> {
  const { dir, built } = await ensureCachedDir(`haraka-${HARAKA_VERSION}`, async (tmp) => {
    const logFile = join(tmp, "install.log");
    // --ignore-scripts: the one install script of its tree compiles an
    // optional syslog binding, which the tests do not use.
    await runLogged("npm", ["install", "--prefix", tmp, "--no-audit", "--no-fund", "--ignore-scripts", "--no-save", `Haraka@${HARAKA_VERSION}`], {
      cwd: tmp,
      logFile,
      timeoutMs: 300_000,
    });
  });
  if (built) info(`Haraka ${HARAKA_VERSION} installed in ${dir}`);
  return dir;
}

/** Haraka's configuration for one instance: relay for loopback clients, our routes, the retry schedule. */
function writeInstance(install: string, dir: string, port: number, options: HarakaOptions): void {
  const config = join(dir, "config");
  mkdirSync(config, { recursive: true });
  // Haraka reads its connection settings (the greeting among them) from the instance only, as `haraka -i` would copy them.
  copyFileSync(join(install, "node_modules", "Haraka", "config", "connection.ini"), join(config, "connection.ini"));
  mkdirSync(join(dir, "plugins"), { recursive: true });
  mkdirSync(join(dir, "queue"), { recursive: true });
  const file = (name: string, text: string) => writeFileSync(join(config, name), text);
  file("plugins", "relay\nemailsvc_routes\n");
  file("smtp.ini", `listen=127.0.0.1:${port}\nnodes=0\n`);
  file("me", `${options.hostname ?? "relay.test"}\n`);
  file("relay.ini", "[relay]\nacl=true\nforce_routing=false\ndest_domains=false\n");
  file("relay_acl_allow", "127.0.0.0/8\n");
  file("outbound.ini", `enable_tls=false\ntemp_fail_intervals=${options.tempFailIntervals ?? "5s"}\n`);
  file("log.ini", "[main]\nlevel=info\n");
  const routes = Object.fromEntries(Object.entries(options.routes).map(([domain, route]) => [domain.toLowerCase(), { exchange: route.host ?? "127.0.0.1", port: route.port }]));
  writeFileSync(
    join(dir, "plugins", "emailsvc_routes.js"),
    `// Written by @emailsvc/testing: the next hop by recipient domain instead of MX records.
const routes = ${JSON.stringify(routes)};
exports.hook_get_mx = function (next, hmail, domain) {
  const route = routes[String(domain).toLowerCase()] || routes["*"];
  if (!route) return next(DENY, "no route for " + domain + " in this test relay");
  next(OK, route);
};
`,
  );
}

function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    // Haraka greets after its connect hooks (a reverse DNS lookup among them), which takes seconds on a busy machine.
    socket.setTimeout(15_000);
    socket.once("data", (greeting) => {
      socket.end("QUIT\r\n");
      resolve(greeting.toString().startsWith("220"));
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Starts a Haraka relay on a free loopback port; stop it in `afterAll`. */
export async function startHaraka(options: HarakaOptions): Promise<HarakaRelay> {
  const install = await harakaInstall();
  const dir = mkdtempSync(join(tmpdir(), "emailsvc-haraka-"));
  const port = await freePort();
  writeInstance(install, dir, port, options);
  const logFile = join(dir, "haraka.log");
  const proc: ManagedProcess = startProcess({
    command: process.execPath,
    args: [join(install, "node_modules", "Haraka", "bin", "haraka"), "-c", dir],
    cwd: dir,
    logFile,
    // Not the test's environment: under NODE_ENV=test (Jest's) Haraka's config reader looks for its files elsewhere.
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
    cleanupDirs: [dir],
  });
  try {
    await waitUntilReady("Haraka", proc, () => accepting(port), 60_000);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { host: "127.0.0.1", port, url: `smtp://127.0.0.1:${port}`, logFile, stop: () => proc.stop() };
}
