// listmonk, the open-source peer, built from the Go module proxy and run here
// on Debian's PostgreSQL, for the side-by-side campaign run (run.ts). Nothing
// of it is committed: the source and the binary are cached under
// EMAILSVC_CACHE_DIR (packages/testing's cacheRoot()).
//
// The proxy reachable here serves github.com/knadh/listmonk at v1.1.0 only
// (every later release, v2 to v5 as `+incompatible` versions, answers 403
// "This module version is not available"), so v1.1.0 (2021) is what runs. Its
// sending path (a manager that fetches subscribers in batches and hands each
// message to a pool of SMTP connections) is the one later releases still have.
// Note: v1.1.0 looks for running campaigns every 5 s (hard-coded), so up to
// 5 s of its time is that wait; at 100,000 it hardly matters.
import { execFile } from "node:child_process";
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureCachedDir, freePort, startPostgres } from "@emailsvc/testing";
import { peakRssMb } from "./process.js";

const run = promisify(execFile);

export const LISTMONK_VERSION = "v1.1.0";
const MODULE = "github.com/knadh/listmonk";

/** Builds listmonk once (about a minute cold) into the cache (the testing kit's ensureCachedDir), then reuses it. */
export async function prepareListmonk(log: (line: string) => void = console.log): Promise<{ binary: string; dir: string }> {
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
  return { binary: join(home, "listmonk"), dir: join(home, "src") };
}

export interface ListmonkResult {
  seconds: number;
  sent: number;
  peakRssMb: number;
  version: string;
  settings: Record<string, unknown>;
}

/**
 * One listmonk campaign to `subscribers` addresses (`addresses(i)`), through
 * the SMTP server at 127.0.0.1:`smtpPort`, timed from the start request until
 * `delivered()` reaches the count and listmonk calls the campaign finished.
 */
export async function runListmonkCampaign(options: {
  subscribers: number;
  addresses: (i: number) => string;
  smtpPort: number;
  subject: string;
  html: string;
  delivered: () => number;
  log?: (line: string) => void;
}): Promise<ListmonkResult> {
  const log = options.log ?? console.log;
  const { binary, dir } = await prepareListmonk(log);
  const pg = await startPostgres();
  const work = mkdtempSync(join(tmpdir(), "listmonk-run-"));
  let child: ChildProcess | undefined;
  try {
    const psql = (sql: string) => run("psql", ["-h", pg.socketDir, "-U", "ferretdb", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], { maxBuffer: 16 << 20 });
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
    await run(binary, ["--config", config, "--install", "--yes"], { cwd: dir });
    // Concurrency and rate opened up, as a user chasing throughput would; one
    // pooled SMTP server without TLS or auth (the sink).
    const settings = {
      "app.concurrency": 20,
      "app.message_rate": 100_000,
      "app.batch_size": 5000,
      "app.max_send_errors": 100_000,
      "privacy.individual_tracking": false,
      smtp: [
        {
          enabled: true,
          host: "127.0.0.1",
          port: options.smtpPort,
          auth_protocol: "none",
          username: "",
          password: "",
          hello_hostname: "",
          max_conns: 20,
          idle_timeout: "15s",
          wait_timeout: "5s",
          max_msg_retries: 2,
          tls_enabled: false,
          tls_skip_verify: true,
          email_headers: [],
        },
      ],
    };
    for (const [key, value] of Object.entries(settings)) {
      await psql(`UPDATE settings SET value = '${JSON.stringify(value)}'::jsonb WHERE key = '${key}'`);
    }
    // The subscribers, straight into its tables (setup, not timed), on the
    // default list (id 1), in place of the two examples --install creates.
    await psql(
      `DELETE FROM subscribers;
       INSERT INTO subscribers (uuid, email, name, attribs, status)
       SELECT gen_random_uuid(), 'r' || i || '@bench.example', 'Reader ' || i, jsonb_build_object('name', 'Reader ' || i), 'enabled'
       FROM generate_series(0, ${options.subscribers - 1}) AS i;
       INSERT INTO subscriber_lists (subscriber_id, list_id, status) SELECT id, 1, 'confirmed' FROM subscribers;`,
    );
    void options.addresses;

    child = spawn(binary, ["--config", config], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    const output: string[] = [];
    child.stdout!.on("data", (d) => output.push(String(d)));
    child.stderr!.on("data", (d) => output.push(String(d)));
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Basic ${Buffer.from("bench:bench-password").toString("base64")}` };
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
      return JSON.parse(text) as { data: Record<string, unknown> };
    };
    // Its template language: {{ .Subscriber.Attribs.name }} where ours has {{metadata.name}}.
    const toListmonk = (text: string) => text.replace(/\{\{\s*metadata\.(\w+)\s*\}\}/g, "{{ .Subscriber.Attribs.$1 }}");
    const created = await call("POST", "/api/campaigns", {
      name: "Bench",
      subject: toListmonk(options.subject),
      lists: [1],
      from_email: "Bench <bench@bench.example>",
      content_type: "html",
      messenger: "email",
      type: "regular",
      body: toListmonk(options.html),
      template_id: 1,
    });
    const id = created.data.id as number;
    const t0 = performance.now();
    await call("PUT", `/api/campaigns/${id}/status`, { status: "running" });
    let status = "running";
    let lastLog = 0;
    while (status === "running") {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = (await call("GET", `/api/campaigns/${id}`)).data.status as string;
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`  listmonk ${LISTMONK_VERSION}: ${((performance.now() - t0) / 1000).toFixed(1)} s, ${options.delivered()} at the sink, ${status}`);
      }
    }
    if (status !== "finished") throw new Error(`listmonk campaign ended ${status}:\n${output.slice(-20).join("")}`);
    // Finished: the last messages may still be on their connections.
    for (let i = 0; i < 100 && options.delivered() < options.subscribers; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, sent: options.delivered(), peakRssMb: peakRssMb(child.pid!), version: LISTMONK_VERSION, settings };
  } finally {
    if (child && child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((resolve) => child!.once("exit", resolve));
    }
    await pg.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
