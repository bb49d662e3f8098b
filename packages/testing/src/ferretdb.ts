import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { ensureCachedDir } from "./cache.js";
import { dockerAvailable } from "./docker.js";
import { makeWritable } from "./fsutil.js";
import { info, seconds } from "./log.js";
import { freePort } from "./ports.js";
import { startPostgres } from "./postgres.js";
import { runCapture, runLogged, startProcess, waitUntilReady } from "./proc.js";

/**
 * FerretDB v1 runs on plain PostgreSQL (v2 needs PostgreSQL with Microsoft's
 * DocumentDB extension, which Debian does not package).
 */
export const FERRETDB_VERSION = "v1.24.2";
const FERRETDB_MODULE = "github.com/FerretDB/FerretDB";
/**
 * Only the PostgreSQL backend is compiled in: the SQLite one (a large
 * pure-Go SQLite) is not used, and leaving it out cuts the cold build.
 */
const FERRETDB_BUILD_TAGS = "ferretdb_no_sqlite";
/** Cache entry; named after the backend so that it never stands in for an older build with another one. */
const FERRETDB_CACHE_NAME = `ferretdb-${FERRETDB_VERSION}-postgresql`;

/** Image used where a Docker engine answers; override with EMAILSVC_MONGO_IMAGE. */
const MONGO_IMAGE = process.env.EMAILSVC_MONGO_IMAGE || "mongo:7.0";

export interface MongoServer {
  /** Connection string without a database name; each suite picks its own database. */
  url: string;
  /** Where the server came from: `MONGO_URL`, a container, or a local FerretDB. */
  source: "env" | "container" | "ferretdb";
  /** What it is, for messages and benchmark labels, e.g. `FerretDB v1.24.2/PostgreSQL 15.18`. */
  description: string;
  /** Stops the server if this process started it; a no-op for `MONGO_URL`. */
  stop(): Promise<void>;
}

/**
 * Builds the FerretDB binary into the cache (once) and returns its path.
 *
 * `go install …@v1.24.2` builds a binary that panics at start, because the
 * version package embeds `build/version/version.txt`, which the release
 * process generates and the module zip lacks. So: copy the module out of Go's
 * module cache, write that file, and build there. `-trimpath` keeps compile
 * results independent of the (temporary) source path, so Go's build cache
 * makes a rebuild fast.
 */
export async function prepareFerretDB(): Promise<{ binary: string; built: boolean; ms: number }> {
  const started = Date.now();
  const { dir, built } = await ensureCachedDir(FERRETDB_CACHE_NAME, async (tmp) => {
    info(`building FerretDB ${FERRETDB_VERSION} into the cache (first run only; minutes on a cold Go build cache)`);
    const downloaded = JSON.parse(
      await runCapture("go", ["mod", "download", "-json", `${FERRETDB_MODULE}@${FERRETDB_VERSION}`], {
        cwd: tmp, // outside any Go module or workspace
        timeoutMs: 10 * 60_000,
      }),
    ) as { Dir?: string; Error?: string };
    if (!downloaded.Dir) throw new Error(`go mod download gave no directory: ${downloaded.Error ?? "unknown error"}`);

    const src = join(tmp, "src");
    await cp(downloaded.Dir, src, { recursive: true });
    await makeWritable(src);
    // Must start with "v" (checked at startup by build/version).
    await writeFile(join(src, "build", "version", "version.txt"), `${FERRETDB_VERSION}\n`);
    await writeFile(join(src, "build", "version", "package.txt"), "emailsvc-testing\n");

    const goStarted = Date.now();
    await runLogged(
      "go",
      ["build", "-trimpath", "-buildvcs=false", "-tags", FERRETDB_BUILD_TAGS, "-o", join(tmp, "bin", "ferretdb"), "./cmd/ferretdb"],
      { cwd: src, logFile: join(tmp, "build.log"), timeoutMs: 30 * 60_000 },
    );
    await writeFile(
      join(tmp, "build.json"),
      JSON.stringify(
        { version: FERRETDB_VERSION, tags: FERRETDB_BUILD_TAGS, goBuildMs: Date.now() - goStarted, builtAt: new Date() },
        null,
        2,
      ),
    );
    // The binary is all we need; the source copy is ~tens of MB.
    await rm(src, { recursive: true, force: true });
  });
  const ms = Date.now() - started;
  if (built) info(`FerretDB built in ${seconds(ms)}`);
  return { binary: join(dir, "bin", "ferretdb"), built, ms };
}

/** One `ping` through the real driver: proves the wire protocol works, not just the TCP port. */
async function ping(url: string): Promise<boolean> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
  try {
    await client.db("admin").command({ ping: 1 });
    return true;
  } finally {
    await client.close();
  }
}

export interface FerretDBOptions {
  /** The address it listens on (default 127.0.0.1): e.g. a Kubernetes node's address, for Pods to reach it. */
  host?: string;
}

/**
 * Starts FerretDB with its PostgreSQL backend on a private PostgreSQL cluster
 * (see postgres.ts) and a free port on 127.0.0.1 (or `host`); stop() stops both.
 */
export async function startFerretDB(options: FerretDBOptions = {}): Promise<MongoServer> {
  const host = options.host ?? "127.0.0.1";
  // PostgreSQL starts while FerretDB builds (the first time) or is found in the cache.
  const [prepared, cluster] = await Promise.allSettled([prepareFerretDB(), startPostgres()]);
  if (prepared.status === "rejected" || cluster.status === "rejected") {
    if (cluster.status === "fulfilled") await cluster.value.stop();
    throw prepared.status === "rejected" ? prepared.reason : (cluster as PromiseRejectedResult).reason;
  }
  const { binary } = prepared.value;
  const postgres = cluster.value;
  const started = Date.now();
  let runDir: string | undefined;
  try {
    runDir = await mkdtemp(join(tmpdir(), "emailsvc-ferretdb-"));
    const port = await freePort(host);
    const logFile = join(runDir, "ferretdb.log");

    // FerretDB reads FERRETDB_* variables as flag defaults; keep the
    // developer's environment from changing the test server.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("FERRETDB_")));
    const proc = startProcess({
      command: binary,
      args: [
        "--mode=normal", // no proxying to a real MongoDB
        "--handler=postgresql",
        `--postgresql-url=${postgres.url}`,
        `--listen-addr=${host}:${port}`,
        `--state-dir=${runDir}`, // state.json (instance UUID); default is the working directory
        "--debug-addr=-", // the metrics/pprof listener defaults to the fixed port 8088: off
        "--telemetry=disable",
        "--log-level=warn",
      ],
      cwd: runDir,
      env,
      logFile,
      cleanupDirs: [runDir],
    });
    runDir = undefined; // the process owns it now
    const url = `mongodb://${host}:${port}/`;
    try {
      // ping reaches PostgreSQL too (FerretDB asks its backend for its status).
      await waitUntilReady("FerretDB", proc, () => ping(url), 60_000);
    } catch (error) {
      await proc.stop(1000);
      throw error;
    }
    const description = `FerretDB ${FERRETDB_VERSION}/PostgreSQL ${postgres.version.split(" ")[0]}`;
    info(`${description} ready at ${url} in ${seconds(Date.now() - started)}`);
    return {
      url,
      source: "ferretdb",
      description,
      stop: async () => {
        await proc.stop();
        await postgres.stop();
      },
    };
  } catch (error) {
    if (runDir !== undefined) await rm(runDir, { recursive: true, force: true });
    await postgres.stop();
    throw error;
  }
}

/** Starts MongoDB in a container (testcontainers), where a Docker engine answers. */
async function startMongoContainer(): Promise<MongoServer> {
  const started = Date.now();
  const { GenericContainer, Wait } = await import("testcontainers");
  const container = await new GenericContainer(MONGO_IMAGE)
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
    .withStartupTimeout(180_000)
    .start();
  const url = `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/?directConnection=true`;
  try {
    // The log line comes slightly before the port is reachable through the proxy on some engines.
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        if (await ping(url)) break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  } catch (error) {
    await container.stop();
    throw error;
  }
  info(`MongoDB container (${MONGO_IMAGE}) ready at ${url} in ${seconds(Date.now() - started)}`);
  return {
    url,
    source: "container",
    description: `MongoDB (${MONGO_IMAGE} container)`,
    stop: async () => void (await container.stop()),
  };
}

/**
 * A MongoDB-compatible server for tests: `MONGO_URL` if set, else a MongoDB
 * container if a Docker engine answers, else a local FerretDB on a private
 * PostgreSQL (FerretDB built once into the cache).
 */
export async function ensureMongo(): Promise<MongoServer> {
  const fromEnv = process.env.MONGO_URL;
  if (fromEnv) return { url: fromEnv, source: "env", description: "the server at MONGO_URL", stop: async () => {} };
  if (await dockerAvailable()) return startMongoContainer();
  return startFerretDB();
}
