import { randomBytes } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { freePort, npmStartNodeArgs, SERVICE_PROCESSES } from "@emailsvc/testing";
import { dataFolder, dockerfileRuntime, imageTar, ROOT, runInImage, runToEnd, type ImageProcess, type UnpackedImage, unpackImage } from "./support/image";

// Issue 21: the project's image, built here without a Docker engine by
// `npm run image` (scripts/image/build.sh, on the Dockerfile's own assembly
// script), checked as a platform team receives it: a docker-archive tar,
// unpacked layer by layer. Its config is the Dockerfile's runtime stage; it
// holds the production install and nothing of the development one (no dev
// tool, test kit, test file or secret); /app is root's and read-only for the
// services, which run as 10001; and the services start from it on a read-only
// root file system (as the Helm chart mounts it) and answer REST calls: npm
// start's embedded/dist/main.js, and every service in its own process on
// MongoDB and Kafka with the gateway as the image's CMD.
//
// Run by `npm run test:image` (not `npm test`: it builds the image, which needs
// root, debootstrap and a minute or more). EMAILSVC_IMAGE_TAR names a tar
// built before instead.

/** What the image may weigh (the docker-archive tar, layers uncompressed): 396 MB today, Debian's minimal base with Node 205 MB and /app 191 MB (102 MB gzip-compressed, as a registry keeps it). */
const MAX_TAR_BYTES = 450_000_000;

/** Never in the image: the dev tools and the test kits (each would also pull in more). */
const DEV_ONLY = ["jest", "typescript", "@swc/core", "@swc/jest", "turbo", "testcontainers", "playwright", "playwright-core", "esbuild", "@emailsvc/testing", "@emailsvc/bench"];

const dockerfile = dockerfileRuntime();

let image: UnpackedImage;
let tarBytes = 0;
const running: ImageProcess[] = [];

beforeAll(() => {
  const tar = imageTar();
  tarBytes = statSync(tar).size;
  image = unpackImage(tar);
}, 900_000);

afterAll(async () => {
  await Promise.all(running.map((proc) => proc.stop()));
  if (image) rmSync(image.work, { recursive: true, force: true });
}, 60_000);

/** Every path under `dir` (absolute), not following symlinks; `skip(path)` prunes a folder. */
function walk(dir: string, skip: (path: string) => boolean = () => false): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    out.push(path);
    if (entry.isDirectory() && !skip(path)) out.push(...walk(path, skip));
  }
  return out;
}

const inImage = (path: string) => join(image.rootfs, path);
const appPaths = () => walk(inImage("app"), (path) => path === inImage("app/node_modules")).map((path) => path.slice(image.rootfs.length));

describe("the image built by npm run image", () => {
  test("is local/emailsvc with the Dockerfile's runtime settings: ENV, USER, WORKDIR, CMD, EXPOSE, LABEL, no entrypoint", () => {
    expect(image.name).toMatch(/^(docker\.io\/)?local\/emailsvc:[\w.-]+$/);
    const config = image.config;
    expect(config.User).toBe(dockerfile.user);
    expect(config.User).toBe("10001:10001");
    for (const [name, value] of Object.entries(dockerfile.env)) expect(config.Env).toContain(`${name}=${value}`);
    expect(config.Env).toEqual(expect.arrayContaining(["NODE_ENV=production", "DATA_DIR=/data"]));
    expect(config.WorkingDir).toBe(dockerfile.workdir);
    expect(config.Cmd).toEqual(dockerfile.cmd);
    expect(config.Cmd).toEqual(["node", "services/gateway/dist/main.js"]);
    expect(config.Entrypoint ?? null).toBeNull();
    expect(Object.keys(config.ExposedPorts ?? {}).sort()).toEqual([...dockerfile.exposed].sort());
    expect(config.Labels).toMatchObject(dockerfile.labels);
    expect(Object.keys(dockerfile.labels)).toContain("org.opencontainers.image.title");
    // A layer that deletes a path would hide it, not remove it: none does.
    expect(image.layerEntries.filter((entry) => /(^|\/)\.wh\./.test(entry))).toEqual([]);
  });

  test("is the Dockerfile's base: its Debian release and its Node major", async () => {
    const [, major, suite] = /^node:(\d+)-(\w+)/.exec(dockerfile.nodeImage)!;
    expect(readFileSync(inImage("etc/os-release"), "utf8")).toContain(`VERSION_CODENAME=${suite}`);
    const data = dataFolder(image, "version");
    const { code, output } = await runToEnd(image, { command: ["node", "--version"], data });
    expect({ code, output: output.trim() }).toEqual({ code: 0, output: expect.stringMatching(new RegExp(`^v${major}\\.`)) });
  });

  test(`weighs less than ${MAX_TAR_BYTES / 1e6} MB (the tar)`, () => {
    expect(tarBytes).toBeLessThan(MAX_TAR_BYTES);
  });

  test("holds the production install: no dev tool, no test kit, each linked workspace with its dist", () => {
    const modules = inImage("app/node_modules");
    for (const name of DEV_ONLY) expect({ name, present: lstatSync(join(modules, name), { throwIfNoEntry: false }) !== undefined }).toEqual({ name, present: false });
    // A devDependency of the repository is there only when a production package needs it.
    const manifests = [ROOT, ...["packages", "services"].flatMap((dir) => readdirSync(join(ROOT, dir)).map((name) => join(ROOT, dir, name))), join(ROOT, "embedded"), join(ROOT, "proto")];
    const devNames = new Set(manifests.flatMap((dir) => Object.keys((JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { devDependencies?: Record<string, string> }).devDependencies ?? {})));
    const installed = readdirSync(modules).flatMap((name) => (name.startsWith("@") ? readdirSync(join(modules, name)).map((sub) => `${name}/${sub}`) : [name])).filter((name) => !name.startsWith("."));
    const needed = new Set<string>();
    for (const name of installed) {
      const manifest = JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
      for (const field of ["dependencies", "optionalDependencies", "peerDependencies"]) for (const dep of Object.keys(manifest[field] ?? {})) needed.add(dep);
    }
    expect(installed.filter((name) => devNames.has(name) && !needed.has(name))).toEqual([]);
    // Every linked workspace runs from its dist; the runnable ones have their entry point.
    const workspaces = readdirSync(join(modules, "@emailsvc"));
    expect(workspaces).toEqual(expect.arrayContaining(["gateway", "subscribers", "templates", "delivery", "campaigns", "portal", "webhooks", "embedded", "proto"]));
    for (const name of workspaces) expect({ name, dist: statSync(join(modules, "@emailsvc", name, "dist")).isDirectory() }).toEqual({ name, dist: true });
    expect(statSync(inImage("app/services/templates/dist/compile-worker.js")).isFile()).toBe(true);
  });

  test("holds no test file, source, source map or type declaration of ours", () => {
    const ours = appPaths();
    expect(ours.length).toBeGreaterThan(100);
    expect(ours.filter((path) => /\.(test|spec)\.[cm]?[jt]s$|\/test\/|\/src\/|\.ts$|\.map$|\.tsbuildinfo$/.test(path))).toEqual([]);
  });

  test("holds no secret: no .env, key or certificate file, no private key in our files or the system's", () => {
    const everything = walk(image.rootfs, (path) => path === inImage("proc") || path === inImage("sys")).map((path) => path.slice(image.rootfs.length));
    expect(everything.filter((path) => /\/\.env(\..*)?$|\.(pem|key|p12|pfx|jks)$|\/id_(rsa|dsa|ecdsa|ed25519)|\/\.npmrc$|\/\.git-credentials$|\/\.ssh\//.test(path))).toEqual([]);
    // A key itself (its base64 body), not a message that names the header. Package code may hold
    // test keys (smtp-server's default TLS key, public in its source); our files and the system's hold none.
    const mine = [...appPaths(), ...walk(inImage("etc")).map((path) => path.slice(image.rootfs.length)), ...walk(inImage("root")).map((path) => path.slice(image.rootfs.length))];
    const withKey = mine.filter((path) => {
      const stat = lstatSync(inImage(path));
      return stat.isFile() && stat.size < 10 * 1024 * 1024 && /-----BEGIN [A-Z ]*PRIVATE KEY-----[\sA-Za-z0-9+/=]{64,}-----END/.test(readFileSync(inImage(path), "latin1"));
    });
    expect(withKey).toEqual([]);
  });

  test("has no .mjmlconfig in /app and no npm, npx, corepack or yarn", () => {
    expect(readdirSync(inImage("app")).filter((name) => name.startsWith(".mjmlconfig"))).toEqual([]);
    const managers = ["usr/local/bin/npm", "usr/local/bin/npx", "usr/local/bin/corepack", "usr/local/bin/yarn", "usr/bin/npm", "usr/bin/npx", "usr/local/lib/node_modules/npm", "usr/local/lib/node_modules/corepack", "usr/share/nodejs/npm"];
    expect(managers.filter((path) => lstatSync(inImage(path), { throwIfNoEntry: false }))).toEqual([]);
  });

  test("/app is root's and writable by nobody else; /data is 10001's; 10001 is a system user with no shell", () => {
    const app = [inImage("app"), ...walk(inImage("app"))];
    const wrong = app.filter((path) => {
      const stat = lstatSync(path);
      return stat.uid !== 0 || stat.gid !== 0 || (!stat.isSymbolicLink() && (stat.mode & 0o022) !== 0);
    });
    expect(wrong.map((path) => path.slice(image.rootfs.length))).toEqual([]);
    const data = statSync(inImage("data"));
    expect({ uid: data.uid, gid: data.gid, otherRead: data.mode & 0o007 }).toEqual({ uid: 10001, gid: 10001, otherRead: 0 });
    expect(readFileSync(inImage("etc/passwd"), "utf8")).toMatch(/^emailsvc:x:10001:10001:[^:]*:\/nonexistent:\/usr\/sbin\/nologin$/m);
    expect(readFileSync(inImage("etc/group"), "utf8")).toMatch(/^emailsvc:x:10001:$/m);
  });

  test("a process of the image, read-only root: 10001, writes /data and /tmp, nothing else", async () => {
    const data = dataFolder(image, "probe");
    const probe = `
      const fs = require("fs");
      const tryWrite = (path) => { try { fs.writeFileSync(path, "x"); return "written"; } catch (e) { return e.code; } };
      console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), cwd: process.cwd(), env: process.env.NODE_ENV,
        app: tryWrite("/app/probe"), root: tryWrite("/probe"), etc: tryWrite("/etc/probe"), data: tryWrite("/data/probe"), tmp: tryWrite("/tmp/probe") }));`;
    const { code, output } = await runToEnd(image, { command: ["node", "-e", probe], data });
    expect(code).toBe(0);
    expect(JSON.parse(output)).toEqual({ uid: 10001, gid: 10001, cwd: "/app", env: "production", app: "EROFS", root: "EROFS", etc: "EROFS", data: "written", tmp: "written" });
  });

  test("npm start's embedded/dist/main.js runs from it on a read-only root: /readyz, then REST calls", async () => {
    const data = dataFolder(image, "embedded");
    const [gateway, portal, metrics] = [await freePort(), await freePort(), await freePort()];
    const proc = runInImage(image, {
      command: ["node", ...npmStartNodeArgs(ROOT), "embedded/dist/main.js"],
      env: { GATEWAY_PORT: String(gateway), PORTAL_PORT: String(portal), METRICS_PORT: String(metrics), LOG_LEVEL: "warn" },
      data,
    });
    running.push(proc);
    const url = `http://127.0.0.1:${gateway}`;
    await untilReady(proc, `${url}/readyz`);
    // The key the first start prints, as a reader of the README takes it.
    const key = /test API key (\S+)/.exec(proc.output.join(""))![1]!;
    const created = await fetch(`${url}/api/v1/subscribers`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: JSON.stringify({ email: "ada@example.com", tags: ["newsletter"] }) });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const read = await fetch(`${url}/api/v1/subscribers/${id}`, { headers: { "x-api-key": key } });
    expect({ status: read.status, email: ((await read.json()) as { email: string }).email }).toEqual({ status: 200, email: "ada@example.com" });
    // Its stores are in /data, the mounted folder, written as 10001.
    expect(readdirSync(data).length).toBeGreaterThan(0);
    expect(statSync(join(data, readdirSync(data)[0]!)).uid).toBe(10001);
    await proc.stop();
    expect(proc.child.exitCode ?? proc.child.signalCode).toBe(0);
  });

  test("every service from it in its own process on MongoDB and Kafka, read-only root with /tmp alone writable as in the chart, the gateway as its CMD: a template, a subscriber, a send", async () => {
    const mongoUrl = process.env.MONGO_URL;
    const kafkaBrokers = process.env.KAFKA_BROKERS;
    if (!mongoUrl || !kafkaBrokers) throw new Error("MONGO_URL and KAFKA_BROKERS are not set: run the test through Jest, whose setup starts FerretDB and Kafka");
    const run = `image_${Date.now().toString(36)}`;
    const admin = randomBytes(24).toString("hex");
    const keys = () => `k1:${randomBytes(32).toString("base64")}`;
    const services = [...SERVICE_PROCESSES.filter((name) => name !== "gateway"), "portal", "gateway"] as const;
    const ports = Object.fromEntries(await Promise.all(services.map(async (name) => [name, await freePort()] as const))) as Record<(typeof services)[number], number>;
    const common: Record<string, string> = {
      MONGO_URL: mongoUrl,
      KAFKA_BROKERS: kafkaBrokers,
      KAFKA_NAMESPACE: run,
      ADMIN_TOKEN: admin,
      TOKEN_SIGNING_KEYS: keys(),
      SUPPRESSION_KEYS: keys(),
      SEALING_KEYS: keys(),
      METRICS_PORT: "0",
      LOG_LEVEL: "warn",
      PORTAL_PORT: String(await freePort()),
      ...Object.fromEntries(services.filter((name) => name !== "gateway").map((name) => [`${name.toUpperCase()}_URL`, `http://127.0.0.1:${ports[name]}`])),
    };
    const procs = new Map<string, ImageProcess>();
    for (const name of services) {
      const listen: Record<string, string> = name === "gateway" ? { GATEWAY_PORT: String(ports.gateway) } : { GRPC_PORT: String(ports[name]) };
      const proc = runInImage(image, {
        // The gateway with the image's own CMD; every other service by its command, as the chart sets it.
        ...(name === "gateway" ? {} : { command: ["node", `services/${name}/dist/main.js`] }),
        // No /data: on MongoDB and Kafka a service keeps nothing on disk, and the chart mounts only /tmp.
        env: { ...common, ...listen, MONGO_DB: `${run}_${name}` },
      });
      procs.set(name, proc);
      running.push(proc);
    }
    const url = `http://127.0.0.1:${ports.gateway}`;
    try {
      await untilReady(procs.get("gateway")!, `${url}/readyz`, procs);
    } catch (error) {
      throw new Error(`${String(error)}\n${[...procs].map(([name, proc]) => `${name}: ${proc.output.join("")}`).join("\n")}`);
    }
    const call = async (method: string, path: string, body?: unknown, auth: Record<string, string> = {}) => {
      const res = await fetch(`${url}${path}`, { method, headers: { "content-type": "application/json", ...auth }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const account = await call("POST", "/admin/v1/accounts", { name: "image" }, { authorization: `Bearer ${admin}` });
    expect(account.status).toBe(201);
    const created = await call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { mode: "test" }, { authorization: `Bearer ${admin}` });
    const key = { "x-api-key": created.body.key as string };
    const subscriber = await call("POST", "/api/v1/subscribers", { email: "ada@example.com", metadata: { first_name: "Ada" } }, key);
    expect(subscriber.status).toBe(201);
    // MJML compiles in the templates service's worker thread (dist/compile-worker.js, started by path).
    const template = await call(
      "POST",
      "/api/v1/templates",
      { name: "Order shipped", category: "transactional", subject: "Order {{order_id}}", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hello {{metadata.first_name}}, order {{order_id}}.</mj-text></mj-column></mj-section></mj-body></mjml>" },
      key,
    );
    expect(template.status).toBe(201);
    const sent = await call("POST", "/api/v1/emails/send", { template_slug: template.body.slug, to: "ada@example.com", variables: { order_id: "42" } }, key);
    expect(sent.status).toBe(202);
    // Through Kafka to the delivery service, rendered, and kept by the sandbox.
    let email = await call("GET", `/api/v1/emails/${sent.body.id}`, undefined, key);
    for (let attempt = 0; attempt < 600 && email.body.status === "queued"; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      email = await call("GET", `/api/v1/emails/${sent.body.id}`, undefined, key);
    }
    expect(email.body.status).toBe("sent");
    const sandbox = await call("GET", `/api/v1/emails/${sent.body.id}/sandbox`, undefined, key);
    expect(JSON.stringify(sandbox.body)).toContain("Hello Ada, order 42.");
    // Each drains on SIGTERM and exits 0.
    for (const name of [...services].reverse()) {
      const proc = procs.get(name)!;
      await proc.stop();
      expect({ name, exit: proc.child.exitCode ?? proc.child.signalCode, output: proc.child.exitCode === 0 ? "" : proc.output.join("") }).toEqual({ name, exit: 0, output: "" });
    }
  });
});

/** Resolves once `url` answers 200; fails with the process's output when it exits first. */
async function untilReady(proc: ImageProcess, url: string, others: ReadonlyMap<string, ImageProcess> = new Map()): Promise<void> {
  for (let attempt = 0; attempt < 1200; attempt++) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`exited:\n${proc.output.join("")}`);
    const dead = [...others].find(([, other]) => other.child.exitCode !== null || other.child.signalCode !== null);
    if (dead) throw new Error(`${dead[0]} exited`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer 200:\n${proc.output.join("")}`);
}
