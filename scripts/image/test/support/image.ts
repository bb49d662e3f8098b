// The image as a container runtime sees it: a docker-archive tar (what
// `npm run image` writes and `docker load` / `ctr images import` read) unpacked
// layer by layer into a root file system, its config, and processes run from
// it the way the Helm chart runs them: as the image's user, in its working
// directory, with its environment, on a read-only root file system with /tmp
// (and /data when a folder is given) the only writable places.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const ROOT = join(__dirname, "..", "..", "..", "..");

/** The part of an image config (Docker's and OCI's) that says how a container starts. */
export interface ImageConfig {
  User?: string;
  Env?: string[];
  Cmd?: string[];
  Entrypoint?: string[] | null;
  WorkingDir?: string;
  ExposedPorts?: Record<string, object>;
  Labels?: Record<string, string>;
}

export interface UnpackedImage {
  /** The image's name and tag from the archive, e.g. local/emailsvc:1a2b3c4. */
  name: string;
  config: ImageConfig;
  /** Every path of every layer, as the layers list them (for whiteouts). */
  layerEntries: string[];
  rootfs: string;
  /** A scratch folder for this image's runs (mount points, data folders). */
  work: string;
}

export function sh(command: string, args: readonly string[], options: { input?: string } = {}): string {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 512 * 1024 * 1024, ...(options.input === undefined ? {} : { input: options.input }) });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (${result.status ?? result.signal}):\n${result.stderr}`);
  return result.stdout;
}

/**
 * The image: EMAILSVC_IMAGE_TAR when set (a tar `npm run image` wrote),
 * else `npm run image` now (minutes with empty caches, under a minute warm).
 */
export function imageTar(): string {
  if (process.env.EMAILSVC_IMAGE_TAR) return process.env.EMAILSVC_IMAGE_TAR;
  const lastLine = sh("bash", [join(ROOT, "scripts", "image", "build.sh")]).trim().split("\n").pop()!;
  return lastLine.split(" ")[1]!;
}

/** Unpacks a docker-archive: the layers in order into one root file system, owners and modes kept. */
export function unpackImage(tar: string): UnpackedImage {
  const work = mkdtempSync(join(tmpdir(), "emailsvc-image-"));
  const archive = join(work, "archive");
  const rootfs = join(work, "rootfs");
  mkdirSync(archive);
  mkdirSync(rootfs);
  sh("tar", ["-xf", tar, "-C", archive]);
  const [manifest] = JSON.parse(readFileSync(join(archive, "manifest.json"), "utf8")) as Array<{ Config: string; RepoTags: string[]; Layers: string[] }>;
  const config = (JSON.parse(readFileSync(join(archive, manifest!.Config), "utf8")) as { config: ImageConfig }).config;
  const layerEntries: string[] = [];
  for (const layer of manifest!.Layers) {
    layerEntries.push(...sh("tar", ["-tf", join(archive, layer)]).split("\n").filter(Boolean));
    sh("tar", ["-xf", join(archive, layer), "-C", rootfs, "--same-owner", "--same-permissions", "--numeric-owner"]);
  }
  sh("rm", ["-rf", archive]);
  return { name: manifest!.RepoTags[0]!, config, layerEntries, rootfs, work };
}

/** The runtime stage of the Dockerfile: its ENV, LABEL, EXPOSE, USER, WORKDIR and CMD, and the Node image it starts from. */
export interface DockerfileRuntime {
  nodeImage: string;
  env: Record<string, string>;
  labels: Record<string, string>;
  exposed: string[];
  user: string;
  workdir: string;
  cmd: string[];
}

/** The Dockerfile's runtime settings, read as the build without Docker reads them (scripts/image/dockerfile-runtime.js). */
export function dockerfileRuntime(): DockerfileRuntime {
  const reader = require(join(ROOT, "scripts", "image", "dockerfile-runtime.js")) as { dockerfileRuntime(text: string): DockerfileRuntime };
  return reader.dockerfileRuntime(readFileSync(join(ROOT, "Dockerfile"), "utf8"));
}

/** A process of the image; `output` is its stdout and stderr so far. */
export interface ImageProcess {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
  /** SIGTERM (the services drain, then exit), then waits for the exit. */
  stop(): Promise<void>;
}

// In a mount namespace of its own (the host's mounts are untouched): the root
// file system bound read-only, /proc, a fresh /tmp and /dev (a tmpfs each, as a
// runtime gives them), /data bound to a folder of the host; then chroot as the
// image's user, in its working directory, with its environment alone.
const RUN_SCRIPT = `
set -e
rootfs="$1" mnt="$2" data="$3" user="$4" workdir="$5"
shift 5
mount --bind "$rootfs" "$mnt"
mount -o remount,bind,ro "$mnt"
mount -t proc proc "$mnt/proc"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$mnt/tmp"
mount -t tmpfs -o mode=755,nosuid tmpfs "$mnt/dev"
for device in null zero random urandom; do
  touch "$mnt/dev/$device"
  mount --bind "/dev/$device" "$mnt/dev/$device"
done
[ -z "$data" ] || mount --bind "$data" "$mnt/data"
exec chroot --userspec="$user" "$mnt" /usr/bin/env -i -C "$workdir" "$@"
`;

let runs = 0;

/**
 * Runs `command` (default: the image's CMD) in the image as described above,
 * with the image's Env and `env` on top. `data` is the host folder mounted at
 * /data (owned by the image's user); without it /data is the image's, read-only
 * like the rest, as in the Helm chart's Pods (which mount /tmp only).
 */
export function runInImage(image: UnpackedImage, options: { command?: readonly string[]; env?: Record<string, string>; data?: string }): ImageProcess {
  const mnt = join(image.work, `mnt-${++runs}`);
  mkdirSync(mnt);
  const env = [...(image.config.Env ?? []), ...Object.entries(options.env ?? {}).map(([name, value]) => `${name}=${value}`)];
  const command = options.command ?? image.config.Cmd ?? [];
  const child = spawn(
    "unshare",
    ["--mount", "--", "bash", "-c", RUN_SCRIPT, "run-in-image", image.rootfs, mnt, options.data ?? "", image.config.User ?? "0:0", image.config.WorkingDir || "/", ...env, ...command],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const output: string[] = [];
  child.stdout!.on("data", (chunk) => output.push(String(chunk)));
  child.stderr!.on("data", (chunk) => output.push(String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    output,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Runs `command` in the image to its end; its exit code and output. */
export async function runToEnd(image: UnpackedImage, options: { command: readonly string[]; env?: Record<string, string>; data?: string }): Promise<{ code: number | null; output: string }> {
  const proc = runInImage(image, options);
  const code = await proc.exited;
  return { code, output: proc.output.join("") };
}

/** A host folder for /data, owned by the image's user as the chart's volume is (fsGroup). */
export function dataFolder(image: UnpackedImage, name: string): string {
  const dir = mkdtempSync(join(image.work, `${name}-`));
  const [uid, gid] = (image.config.User ?? "0:0").split(":").map(Number);
  sh("chown", [`${uid}:${gid ?? uid}`, dir]);
  return dir;
}
