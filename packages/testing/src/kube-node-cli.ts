import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { alive } from "./cache.js";
import { prepareCertManager } from "./cert-manager.js";
import { cleanupKubeNodeLeftovers, kubeNodeOwner, prepareKubeNode, startKubeNode } from "./kube-node.js";
import { prepareKubeRouter } from "./kube-router.js";
import { seconds } from "./log.js";
import { tail } from "./proc.js";
import { prepareTraefik } from "./traefik.js";

/**
 * `npm run kube:up` / `kube:down`: the tests' Kubernetes node for people, to
 * try things by hand (e.g. `helm install` of the chart). `up` starts it in a
 * background process of its own (`serve`), waits until it is Ready and prints
 * the kubeconfig's path on stdout; `down` stops it (and cleans up after one
 * that died).
 */
const USAGE = `usage: kube-node up [image.tar...] | down | prepare | serve [image.tar...]
  up       start the node in the background (importing the given docker-archive tars), print the kubeconfig path
  down     stop it, leaving the host as it was found
  prepare  install the Debian packages, build the binaries, CoreDNS, the images, cert-manager's controller
           and Traefik into the cache (a CI step)`;

const STATE_FILE = "/var/tmp/emailsvc-kube-node.up.json";
const LOG_FILE = "/var/tmp/emailsvc-kube-node.out.log";

interface UpState {
  pid: number;
  kubeconfig: string;
  nodeAddress: string;
  server: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const readState = async (): Promise<UpState | undefined> =>
  JSON.parse(await readFile(STATE_FILE, "utf8").catch(() => "null")) as UpState | undefined;

/** Runs the node until SIGINT/SIGTERM (the background process of `up`). */
async function serve(images: string[]): Promise<number> {
  const node = await startKubeNode({ images });
  const state: UpState = { pid: process.pid, kubeconfig: node.kubeconfigPath, nodeAddress: node.nodeAddress, server: node.server };
  await writeFile(STATE_FILE, JSON.stringify(state));
  const keepAlive = setInterval(() => {}, 1 << 30);
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  clearInterval(keepAlive);
  console.error(`${signal}: stopping the node`);
  try {
    await node.stop();
  } finally {
    await rm(STATE_FILE, { force: true });
  }
  return 0;
}

async function up(script: string, images: string[]): Promise<number> {
  const owner = await kubeNodeOwner();
  const running = await readState();
  if (owner && running?.pid === owner) {
    console.error(`a node is running already (process ${owner}); npm run kube:down stops it`);
    console.log(running.kubeconfig);
    return 0;
  }
  await rm(STATE_FILE, { force: true });
  const fd = openSync(LOG_FILE, "w");
  const child = spawn(process.execPath, [script, "serve", ...images], { detached: true, stdio: ["ignore", fd, fd] });
  closeSync(fd);
  child.unref();
  console.error(`starting the node in process ${child.pid} (log: ${LOG_FILE}); a cold cache builds for 10 to 20 min`);
  for (;;) {
    const state = await readState();
    if (state && state.pid === child.pid) {
      console.error(`node Ready at ${state.nodeAddress}, API server ${state.server}; npm run kube:down stops it`);
      console.error(`export KUBECONFIG=${state.kubeconfig}`);
      console.log(state.kubeconfig);
      return 0;
    }
    if (!alive(child.pid!)) {
      console.error(`the node did not start:\n${tail(LOG_FILE)}`);
      return 1;
    }
    await sleep(500);
  }
}

async function down(): Promise<number> {
  const owner = await kubeNodeOwner();
  if (owner) {
    process.kill(owner, "SIGTERM");
    const deadline = Date.now() + 180_000;
    while (alive(owner)) {
      if (Date.now() > deadline) {
        console.error(`process ${owner} still runs after 3 min; see ${LOG_FILE}`);
        return 1;
      }
      await sleep(500);
    }
    console.error(`stopped (process ${owner})`);
  }
  // Nothing left of a node that died (a no-op when it stopped cleanly).
  const leftovers = await cleanupKubeNodeLeftovers();
  await rm(STATE_FILE, { force: true });
  await rm(LOG_FILE, { force: true });
  if (!owner) console.error(leftovers ? "cleaned up after a node that died" : "no node was running");
  return 0;
}

/** Entry point of scripts/kube-node/cli.mjs; `script` is that file (what `up` runs in the background). */
export async function main(script: string, argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "up":
        return await up(script, rest);
      case "serve":
        return await serve(rest);
      case "down":
        return await down();
      case "prepare": {
        const prepared = await prepareKubeNode();
        console.log(`kubernetes binaries: ${prepared.kube.bin}`);
        console.log(`coredns: ${prepared.coredns}`);
        console.log(`images: ${prepared.imageTars.pause} ${prepared.imageTars.busybox}`);
        console.log(`${prepared.built ? "built" : "already cached"} in ${seconds(prepared.ms)}`);
        // What the tests run beside the node (one after the other: on two cores, at once is no faster).
        for (const [what, prepare] of [["cert-manager's controller", prepareCertManager], ["Traefik", prepareTraefik], ["kube-router", prepareKubeRouter]] as const) {
          const { binary, built, ms } = await prepare();
          console.log(`${what}: ${binary} (${built ? "built" : "already cached"} in ${seconds(ms)})`);
        }
        return 0;
      }
      default:
        console.error(USAGE);
        return 2;
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    return 1;
  }
}
