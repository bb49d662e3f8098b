import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ensureCachedDir } from "./cache.js";
import { info, seconds } from "./log.js";
import { runCapture, runLogged } from "./proc.js";

/**
 * Go programs the kits build from the module proxy into the cache, one way
 * for all of them (kube.ts's Kubernetes binaries, cert-manager's controller,
 * Traefik): a wrapper module of our own (`go.mod` and any files it needs),
 * `go mod tidy`, then one `go build` of the given packages into
 * `<cache>/<name>-<digest>/bin`. The digest covers the generated files, so a
 * change to them builds a new folder instead of finding an old one without it.
 */
export interface GoBuild {
  /** Cache folder's name before the digest, e.g. `cert-manager-v1.21.2`. */
  name: string;
  /** What the log says it builds, e.g. "cert-manager's controller v1.21.2". */
  what: string;
  /** How long a cold build takes, for the log. */
  coldEstimate: string;
  /**
   * The wrapper module's files (relative paths; at least `go.mod`). A function
   * when they depend on what `go mod download` finds (called in the build
   * folder; its result is in the digest only through `digestOf`).
   */
  files: Record<string, string> | ((work: string) => Promise<Record<string, string>>);
  /** What identifies `files` when it is a function (versions, patches' text). */
  digestOf?: string;
  /** Packages to build (`./cmd/...`, or a main package of a dependency). */
  packages: string[];
  ldflags?: string;
}

/** The toolchain on the machine, not one that a go.mod's go line might download. */
export function goEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: `${process.env.GOFLAGS ?? ""} -buildvcs=false`.trim(), ...extra };
}

/** `go mod download -json <module>@<version>`, outside any module: where its files and go.mod are. */
export async function goModDownload(module: string, version: string, cwd: string): Promise<{ Dir: string; GoMod: string }> {
  const downloaded = JSON.parse(
    await runCapture("go", ["mod", "download", "-json", `${module}@${version}`], { cwd, timeoutMs: 10 * 60_000 }),
  ) as { Dir?: string; GoMod?: string; Error?: string };
  if (!downloaded.Dir || !downloaded.GoMod) throw new Error(`go mod download ${module}@${version}: ${downloaded.Error ?? "no directory"}`);
  return { Dir: downloaded.Dir, GoMod: downloaded.GoMod };
}

export function goCacheName(build: Pick<GoBuild, "name" | "files" | "digestOf" | "packages" | "ldflags">): string {
  const identity = typeof build.files === "function" ? (build.digestOf ?? "") : JSON.stringify(Object.entries(build.files));
  const digest = createHash("sha256")
    .update(JSON.stringify([identity, build.packages, build.ldflags ?? ""]))
    .digest("hex")
    .slice(0, 8);
  return `${build.name}-${digest}`;
}

/** Builds (once) and returns the folder of the binaries. build.json beside it records the times. */
export async function buildGoPrograms(build: GoBuild, cacheName = goCacheName(build)): Promise<{ bin: string; built: boolean; ms: number }> {
  const started = Date.now();
  const { dir, built } = await ensureCachedDir(cacheName, async (tmp) => {
    info(`building ${build.what} into the cache (first run only; ${build.coldEstimate} on 2 cores with cold Go caches)`);
    const src = join(tmp, "src");
    await mkdir(src);
    const files = typeof build.files === "function" ? await build.files(tmp) : build.files;
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(src, path)), { recursive: true });
      await writeFile(join(src, path), text);
    }
    const logFile = join(tmp, "build.log");
    const env = goEnv();
    await runLogged("go", ["mod", "tidy"], { cwd: src, logFile, env, timeoutMs: 15 * 60_000 });
    const goStarted = Date.now();
    await runLogged("go", ["build", "-trimpath", ...(build.ldflags ? ["-ldflags", build.ldflags] : []), "-o", join(tmp, "bin") + "/", ...build.packages], {
      cwd: src,
      logFile,
      env,
      timeoutMs: 40 * 60_000,
    });
    await writeFile(
      join(tmp, "build.json"),
      JSON.stringify({ what: build.what, packages: build.packages, goBuildMs: Date.now() - goStarted, totalMs: Date.now() - started, builtAt: new Date() }, null, 2),
    );
  });
  const ms = Date.now() - started;
  if (built) info(`${build.what} built in ${seconds(ms)}`);
  return { bin: join(dir, "bin"), built, ms };
}
