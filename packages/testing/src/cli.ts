import { spawn } from "node:child_process";
import { cacheRoot } from "./cache.js";
import { prepareFerretDB } from "./ferretdb.js";
import { prepareKafka } from "./kafka.js";
import { KUBE_VERSION, prepareKube } from "./kube.js";
import { findPostgres } from "./postgres.js";
import { seconds } from "./log.js";
import { ensureServers } from "./servers.js";

const USAGE = `usage:
  prepare            build FerretDB, download the Kafka jars, build kube-apiserver, kube-controller-manager
                     (and the node's kubelet, kube-scheduler, kube-proxy) and fetch cert-manager's CRDs into
                     the cache, find PostgreSQL and etcd, print timings
  prepare --no-kube  the same without the Kubernetes parts
  start              start both servers, print MONGO_URL=... KAFKA_BROKERS=..., run until SIGINT/SIGTERM
  run -- <command>   start both servers, run <command> with MONGO_URL and KAFKA_BROKERS set, stop them`;

/**
 * Builds the local servers into the cache without starting them, so CI can
 * warm the cache in its own step (and show how long that took).
 * All run at once: the Maven download mostly waits on the network; the two Go
 * builds (FerretDB, the Kubernetes control plane) share the cores, which takes
 * about as long as one after the other, and no longer.
 * PostgreSQL (FerretDB's backend) comes from the system; it is only looked for,
 * so that a missing install fails here, with what to do, rather than in the tests.
 * etcd (the Kubernetes API server's store) is looked for, and installed from
 * Debian's etcd-server when missing (scripts/etcd/install.sh).
 */
async function prepare(withKube: boolean): Promise<void> {
  const started = Date.now();
  const postgres = findPostgres();
  const [ferret, kafka, kube] = await Promise.all([
    prepareFerretDB(),
    prepareKafka(),
    withKube ? prepareKube() : Promise.resolve(undefined),
  ]);
  const state = (built: boolean): string => (built ? "built" : "already cached");
  console.log(`cache: ${cacheRoot()}`);
  console.log(`postgresql: ${postgres} (from the system)`);
  console.log(`ferretdb: ${ferret.binary} (${state(ferret.built)}, ${seconds(ferret.ms)})`);
  console.log(`kafka: ${kafka.libs} (${state(kafka.built)}, ${seconds(kafka.ms)})`);
  if (kube) {
    console.log(`etcd: ${kube.etcd}`);
    console.log(`kubernetes ${KUBE_VERSION}: ${kube.bin} (${state(kube.built)}, ${seconds(kube.ms)}); cert-manager CRDs: ${kube.crds}`);
  }
  console.log(`total: ${seconds(Date.now() - started)}`);
}

/** Resolves on the first SIGINT or SIGTERM. */
function signalled(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
}

/** Starts both servers and keeps them up until interrupted. */
async function start(): Promise<void> {
  const started = Date.now();
  const servers = await ensureServers();
  // Machine-readable line on stdout (e.g. `eval $(... | tail -1)` or `export $(...)`); progress went to stderr.
  console.log(`MONGO_URL=${servers.mongo.url} KAFKA_BROKERS=${servers.kafka.brokers}`);
  console.error(`ready in ${seconds(Date.now() - started)}; press Ctrl-C to stop`);
  // The server processes are unref'd, so something must keep us alive.
  const keepAlive = setInterval(() => {}, 1 << 30);
  const signal = await signalled();
  clearInterval(keepAlive);
  console.error(`${signal}: stopping servers`);
  await servers.stop();
}

/** Starts both servers, runs a command against them, stops them and exits with the command's code. */
async function run(command: readonly string[]): Promise<number> {
  const [file, ...args] = command;
  if (!file) throw new Error(USAGE);
  const servers = await ensureServers();
  const env = { ...process.env, MONGO_URL: servers.mongo.url, KAFKA_BROKERS: servers.kafka.brokers };
  const child = spawn(file, args, { stdio: "inherit", env, shell: process.platform === "win32" });
  // Ctrl-C reaches the child through the terminal too; forwarding covers `kill <our pid>`.
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  process.on("SIGINT", forward("SIGINT"));
  process.on("SIGTERM", forward("SIGTERM"));
  const code = await new Promise<number>((resolve) => {
    child.on("error", (error) => {
      console.error(error.message);
      resolve(127);
    });
    child.on("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 128 : 1)));
  });
  await servers.stop();
  return code;
}

/** Entry point of scripts/test-servers/*.mjs; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "prepare":
        if (rest.length > 0 && !(rest.length === 1 && rest[0] === "--no-kube")) {
          console.error(USAGE);
          return 2;
        }
        await prepare(rest[0] !== "--no-kube");
        return 0;
      case "start":
        if (rest.length > 0) {
          console.error(USAGE);
          return 2;
        }
        await start();
        return 0;
      case "run":
        return await run(rest[0] === "--" ? rest.slice(1) : rest);
      default:
        console.error(USAGE);
        return 2;
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    return 1;
  }
}
