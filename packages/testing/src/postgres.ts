import { existsSync, readFileSync, readdirSync, realpathSync } from "node:fs";
import { chmod, chown, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { info, seconds } from "./log.js";
import { runCapture, runLogged, startProcess, waitUntilReady } from "./proc.js";

/** A private PostgreSQL cluster, reachable only through a unix socket in a directory of its own. */
export interface PostgresServer {
  /** The socket's directory: the `host` of a libpq or pgx connection string. */
  socketDir: string;
  /** `postgres://<superuser>@/postgres?host=<socketDir>`, for pgx (FerretDB) and libpq (`psql "<url>"`). */
  url: string;
  /** As `postgres --version` says, e.g. `15.18 (Debian 15.18-0+deb12u1)`. */
  version: string;
  /** Fast shutdown (clients are disconnected), then the cluster's directory is removed. */
  stop(): Promise<void>;
}

/** The superuser initdb creates; trust authentication over the private socket, so no password. */
const SUPERUSER = "ferretdb";
/** Only names the socket file (`.s.PGSQL.<port>`): the server listens on no TCP port. */
const SOCKET_PORT = 5432;

/**
 * The directory holding PostgreSQL's server programs (`initdb`, `postgres`):
 * `EMAILSVC_POSTGRES_BIN`, else `initdb` on PATH (with symlinks resolved),
 * else Debian's and Ubuntu's `/usr/lib/postgresql/<major>/bin`, the newest
 * major first (Debian puts only client wrappers on PATH).
 */
export function findPostgres(): string {
  const hasServer = (dir: string): boolean => existsSync(join(dir, "initdb")) && existsSync(join(dir, "postgres"));
  const explicit = process.env.EMAILSVC_POSTGRES_BIN;
  if (explicit) {
    if (!hasServer(explicit)) throw new Error(`EMAILSVC_POSTGRES_BIN=${explicit} holds no initdb and postgres`);
    return explicit;
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const initdb = dir ? join(dir, "initdb") : "";
    if (initdb && existsSync(initdb)) {
      const real = dirname(realpathSync(initdb));
      if (hasServer(real)) return real;
    }
  }
  const debian = "/usr/lib/postgresql";
  const majors = existsSync(debian)
    ? readdirSync(debian)
        .filter((name) => /^\d+(\.\d+)?$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const dir = join(debian, major, "bin");
    if (hasServer(dir)) return dir;
  }
  throw new Error(
    "PostgreSQL's server programs (initdb, postgres) were not found; they are needed for FerretDB's backend: " +
      "install Debian's `postgresql` package (`apt-get install postgresql`, as .ci/run does), " +
      "or set EMAILSVC_POSTGRES_BIN to the directory that holds them",
  );
}

/**
 * The user the cluster runs as. PostgreSQL refuses to run as root, so under
 * root (CI and these machines) it runs as Debian's `postgres` system user, or
 * `nobody` where that does not exist; otherwise as whoever runs the tests.
 */
function clusterUser(): { uid: number; gid: number; name: string } | undefined {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return undefined;
  const passwd = existsSync("/etc/passwd") ? readFileSync("/etc/passwd", "utf8").split("\n") : [];
  for (const name of ["postgres", "nobody"]) {
    const fields = passwd.find((line) => line.startsWith(`${name}:`))?.split(":");
    if (fields && fields.length >= 4) return { name, uid: Number(fields[2]), gid: Number(fields[3]) };
  }
  throw new Error("running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as");
}

/** The environment without PG* variables (PGDATA, PGPORT, … would change what initdb and postgres do). */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("PG")));
}

/** PostgreSQL ≥ 10 writes "ready" as line 8 of postmaster.pid once it accepts connections (what `pg_ctl -w` waits for). */
async function accepting(dataDir: string): Promise<boolean> {
  const lines = (await readFile(join(dataDir, "postmaster.pid"), "utf8").catch(() => "")).split("\n");
  return lines[7]?.trim() === "ready";
}

/**
 * Creates and starts a throwaway PostgreSQL cluster: `initdb` into a fresh
 * temporary directory, then `postgres` listening only on a unix socket in that
 * directory (mode 0700; no TCP at all, so no port to collide on and nothing
 * reachable from the network), with durability off (`fsync`,
 * `synchronous_commit`, `full_page_writes`: the data dies with the run
 * anyway). It stops with the run like every other test server (stop(), exit
 * hook, watchdog), and its directory is removed then.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = findPostgres();
  const started = Date.now();
  const version = (await runCapture(join(bin, "postgres"), ["--version"])).trim().replace(/^postgres \(PostgreSQL\) /, "");
  const user = clusterUser();
  // A unix socket path has at most 107 bytes; a long TMPDIR would not fit.
  const base = join(tmpdir(), "emailsvc-postgres-XXXXXX", `.s.PGSQL.${SOCKET_PORT}`).length < 100 ? tmpdir() : "/tmp";
  const runDir = await mkdtemp(join(base, "emailsvc-postgres-"));
  await chmod(runDir, 0o700);
  if (user) await chown(runDir, user.uid, user.gid);
  const dataDir = join(runDir, "data");
  const logFile = join(runDir, "postgres.log");
  const as = user ? { uid: user.uid, gid: user.gid } : {};
  const env = cleanEnv();

  try {
    await runLogged(
      join(bin, "initdb"),
      ["-D", dataDir, "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"],
      { cwd: runDir, logFile, env, timeoutMs: 120_000, ...as },
    );
  } catch (error) {
    await rm(runDir, { recursive: true, force: true });
    throw error;
  }

  const proc = startProcess({
    command: join(bin, "postgres"),
    args: [
      "-D", dataDir,
      "-k", runDir, // unix_socket_directories
      "-p", String(SOCKET_PORT),
      "-c", "listen_addresses=", // no TCP
      "-c", "unix_socket_permissions=0700",
      "-c", "fsync=off",
      "-c", "synchronous_commit=off",
      "-c", "full_page_writes=off",
      "-c", "jit=off", // compiling tiny queries only costs time
    ],
    cwd: runDir,
    env,
    logFile,
    cleanupDirs: [runDir],
    stopSignal: "SIGINT", // fast shutdown; SIGTERM would wait for FerretDB to disconnect
    exitSignal: "SIGQUIT", // immediate shutdown, which still removes its shared memory (SIGKILL would not)
    ...as,
  });
  try {
    await waitUntilReady("PostgreSQL", proc, () => accepting(dataDir), 60_000);
  } catch (error) {
    await proc.stop(1000);
    throw error;
  }
  info(`PostgreSQL ${version} ready in ${runDir}${user ? ` (as ${user.name})` : ""} in ${seconds(Date.now() - started)}`);
  return {
    socketDir: runDir,
    url: `postgres://${SUPERUSER}@/postgres?host=${encodeURIComponent(runDir)}&port=${SOCKET_PORT}`,
    version,
    stop: () => proc.stop(),
  };
}
