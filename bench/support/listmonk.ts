// listmonk, the open-source peer, built from the Go module proxy and run here
// on Debian's PostgreSQL, for the side-by-side runs (bench/campaign: a
// campaign through SMTP; bench/import: its CSV import). Nothing of it is
// committed: the source and the binary are cached under EMAILSVC_CACHE_DIR
// (packages/testing's cacheRoot()).
//
// The proxy reachable here serves github.com/knadh/listmonk at v1.1.0 only
// (every later release, v2 to v5 as `+incompatible` versions, answers 403
// "This module version is not available"), so v1.1.0 (2021) is what runs. Its
// sending path (a manager that fetches subscribers in batches and hands each
// message to a pool of SMTP connections) is the one later releases still have.
// A later release runs from a clone of its repository instead (LISTMONK_SRC,
// `listmonkFromSource`; the import benchmark runs it beside v1.1.0).
import { execFile } from "node:child_process";
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureCachedDir, freePort, startPostgres } from "@emailsvc/testing";
import { treeCpuSeconds } from "./process.js";

const run = promisify(execFile);

export const LISTMONK_VERSION = "v1.1.0";
const MODULE = "github.com/knadh/listmonk";

/** A listmonk build: its version, its binary and the directory it runs in (its queries, schema and static files). */
export interface ListmonkBuild {
  version: string;
  binary: string;
  dir: string;
}

/** Builds listmonk once (about a minute cold) into the cache (the testing kit's ensureCachedDir), then reuses it. */
export async function prepareListmonk(log: (line: string) => void = console.log): Promise<ListmonkBuild> {
  const { dir: home } = await ensureCachedDir(`listmonk-${LISTMONK_VERSION}`, async (tmp) => {
    log(`building listmonk ${LISTMONK_VERSION} from the Go module proxy`);
    const scratch = mkdtempSync(join(tmpdir(), "listmonk-mod-"));
    try {
      await run("go", ["mod", "init", "fetch"], { cwd: scratch });
      const { stdout } = await run("go", ["mod", "download", "-json", `${MODULE}@${LISTMONK_VERSION}`], { cwd: scratch, maxBuffer: 1 << 20 });
      const info = JSON.parse(stdout) as { Dir?: string; Error?: string };
      if (!info.Dir) throw new Error(`go mod download ${MODULE}@${LISTMONK_VERSION}: ${info.Error ?? "no directory"}`);
      const src = join(tmp, "src");
      cpSync(info.Dir, src, { recursive: true });
      // The module cache is read-only.
      await run("chmod", ["-R", "u+w", src]);
      // The module holds the admin app's sources, not its build; listmonk loads
      // the build's files at start (from the working directory when none are
      // stuffed into the binary). The API does not need them: placeholders.
      mkdirSync(join(src, "frontend", "dist", "frontend"), { recursive: true });
      writeFileSync(join(src, "frontend", "dist", "favicon.png"), "");
      writeFileSync(join(src, "frontend", "dist", "frontend", "index.html"), "<!doctype html><title>listmonk</title>");
      await run("go", ["build", "-o", join(tmp, "listmonk"), "./cmd"], { cwd: src, env: { ...process.env, GOFLAGS: "-mod=mod" }, maxBuffer: 16 << 20 });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
  return { version: LISTMONK_VERSION, binary: join(home, "listmonk"), dir: join(home, "src") };
}

/**
 * Builds the listmonk of a clone of its repository (`src`, e.g. LISTMONK_SRC;
 * a bare one such as a mirror works too) at `ref` (default HEAD, e.g.
 * v6.2.0) once per commit into the cache: `go build` of that commit's tree
 * (its Go modules from the proxy), the admin app's build replaced by a
 * placeholder as for v1.1.0 (the API does not need it). Its version is what
 * `git describe --tags` says of it.
 */
export async function listmonkFromSource(src: string, ref = "HEAD", log: (line: string) => void = console.log): Promise<ListmonkBuild> {
  const version = (await run("git", ["-C", src, "describe", "--tags", "--always", ref])).stdout.trim();
  const commit = (await run("git", ["-C", src, "rev-parse", "--short=12", `${ref}^{commit}`])).stdout.trim();
  const { dir: home } = await ensureCachedDir(`listmonk-src-${commit}`, async (tmp) => {
    log(`building listmonk ${version} from ${src}`);
    const copy = join(tmp, "src");
    // The commit's tracked files only: no build output or node_modules of the clone.
    const archive = join(tmp, "src.tar");
    await run("git", ["-C", src, "archive", "--format=tar", "-o", archive, commit]);
    mkdirSync(copy, { recursive: true });
    await run("tar", ["-xf", archive, "-C", copy]);
    rmSync(archive);
    mkdirSync(join(copy, "frontend", "dist"), { recursive: true });
    writeFileSync(join(copy, "frontend", "dist", "index.html"), "<!doctype html><title>listmonk</title>");
    await run("go", ["build", "-o", join(tmp, "listmonk"), "-ldflags", `-s -w -X 'main.versionString=${version}' -X 'main.buildString=${version} (${commit})'`, "./cmd"], {
      cwd: copy,
      env: { ...process.env, CGO_ENABLED: "0" },
      maxBuffer: 16 << 20,
    });
  });
  return { version, binary: join(home, "listmonk"), dir: join(home, "src") };
}

/** A running listmonk on its own PostgreSQL, with its admin API. */
export interface Listmonk {
  version: string;
  /** `http://127.0.0.1:<port>`. */
  base: string;
  /** Headers that authenticate a call to its admin API. */
  auth: Record<string, string>;
  /** A JSON call to its admin API; throws on an error status. */
  call(method: string, path: string, body?: unknown): Promise<{ data: any }>;
  /** One SQL script through psql on its database; the output unaligned, tuples only, fields split by `separator` (default `|`). */
  psql(sql: string, separator?: string): Promise<string>;
  /** listmonk's process id. */
  pid: number;
  /** CPU seconds PostgreSQL (the postmaster and its backends) has used so far. */
  postgresCpuSeconds(): number;
  /** Its output so far (for errors). */
  output: string[];
  stop(): Promise<void>;
}

/**
 * Builds (once) and starts listmonk on a fresh PostgreSQL: `--install`, then
 * `settings` written into its settings table and `setup` run (both before it
 * starts, so that it reads them), then the binary, until /api/health answers.
 */
export async function startListmonk(options: {
  /** Default: v1.1.0 from the module proxy (prepareListmonk). */
  build?: ListmonkBuild;
  settings: Record<string, unknown>;
  setup?: (psql: (sql: string) => Promise<string>) => Promise<void>;
  log?: (line: string) => void;
}): Promise<Listmonk> {
  const log = options.log ?? console.log;
  const build = options.build ?? (await prepareListmonk(log));
  const { binary, dir } = build;
  const pg = await startPostgres();
  const work = mkdtempSync(join(tmpdir(), "listmonk-run-"));
  let child: ChildProcess | undefined;
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await new Promise((resolve) => child!.once("exit", resolve));
    }
    await pg.stop();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    const psql = async (sql: string, separator = "|") =>
      (await run("psql", ["-h", pg.socketDir, "-U", "ferretdb", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-A", "-t", "-F", separator, "-c", sql], { maxBuffer: 256 << 20 })).stdout;
    const postmaster = Number(readFileSync(join(pg.socketDir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
    const port = await freePort();
    const config = join(work, "config.toml");
    writeFileSync(
      config,
      [
        "[app]",
        `address = "127.0.0.1:${port}"`,
        'admin_username = "bench"',
        'admin_password = "bench-password"',
        "[db]",
        `host = "${pg.socketDir}"`,
        "port = 5432",
        'user = "ferretdb"',
        // Trust authentication on the private socket ignores it; an empty one
        // would make listmonk's connection string read the next key as the password.
        'password = "unused"',
        'database = "postgres"',
        'ssl_mode = "disable"',
        "max_open = 25",
        "max_idle = 25",
        'max_lifetime = "300s"',
        "",
      ].join("\n"),
    );
    // From v4 on, the admin API takes an API user's token, no longer the
    // config's admin password: --install makes the first admin and an API
    // user from these, and prints the user's token to stderr. v1.1.0 ignores them.
    const installed = await run(binary, ["--config", config, "--install", "--yes"], {
      cwd: dir,
      env: { ...process.env, LISTMONK_ADMIN_USER: "bench", LISTMONK_ADMIN_PASSWORD: "bench-password", LISTMONK_ADMIN_API_USER: "benchapi" },
    });
    const token = /LISTMONK_ADMIN_API_TOKEN="([^"]+)"/.exec(installed.stderr)?.[1];
    for (const [key, value] of Object.entries(options.settings)) {
      await psql(`UPDATE settings SET value = '${JSON.stringify(value)}'::jsonb WHERE key = '${key}'`);
    }
    await options.setup?.(psql);

    child = spawn(binary, ["--config", config], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    const output: string[] = [];
    child.stdout!.on("data", (d) => output.push(String(d)));
    child.stderr!.on("data", (d) => output.push(String(d)));
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: token ? `token benchapi:${token}` : `Basic ${Buffer.from("bench:bench-password").toString("base64")}` };
    for (let i = 0; ; i++) {
      if (child.exitCode !== null || i > 300) throw new Error(`listmonk did not start:\n${output.join("")}`);
      try {
        if ((await fetch(`${base}/api/health`, { headers: auth })).ok) break;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(base + path, { method, headers: { ...auth, "content-type": "application/json" }, ...(body ? { body: JSON.stringify(body) } : {}) });
      const text = await res.text();
      if (!res.ok) throw new Error(`listmonk ${method} ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as { data: any };
    };
    return {
      version: build.version,
      base,
      auth,
      call,
      psql,
      pid: child.pid!,
      postgresCpuSeconds: () => treeCpuSeconds(postmaster),
      output,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
