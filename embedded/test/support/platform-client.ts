// A platform started in this process on embedded storage (port 0), with one
// account and one test key made through the admin API, and a `call` that
// checks every response against the OpenAPI document the gateway serves.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { MongoClient } from "mongodb";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@emailsvc/telemetry";
import { freePort } from "@emailsvc/testing";
import type { OpenApiDocument } from "../../../services/gateway/src/openapi";
import { GENEROUS_RATE_LIMIT_ENV, responseChecker, sendChecked, type TestResponse } from "../../../services/gateway/test/support/harness";
import { startPlatform, type PlatformOptions, type RunningPlatform } from "../../src/platform";

export const ADMIN_TOKEN = "edge-admin-token-0123456789abcdef";

export interface CallOptions {
  /** API key; default the test key, `null` for none. */
  key?: string | null;
  body?: unknown;
  /** Sent as is, with `Content-Type: application/json` unless headers say otherwise. */
  raw?: string;
  headers?: Record<string, string>;
  admin?: boolean;
}

export interface TestPlatform {
  platform: RunningPlatform;
  /** With `mongo`: the server and the prefix of every service's database (`<prefix>templates`, …). */
  mongo?: { url: string; dbPrefix: string } | undefined;
  url: string;
  /** DATA_DIR of the platform (the embedded stores, the bus' log, the development secrets). */
  dataDir: string;
  accountId: string;
  key: string;
  call(method: string, path: string, options?: CallOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

/**
 * `env`: settings of the services and the gateway; default generous rate limits (see GENEROUS_RATE_LIMIT_ENV).
 * `mongo`: the services' databases on the test's MongoDB server (MONGO_URL), so a test can reach into them.
 */
export async function startTestPlatform(
  name: string,
  env: Readonly<Record<string, string>> = GENEROUS_RATE_LIMIT_ENV,
  options: { mongo?: boolean; kafka?: boolean; configOverrides?: PlatformOptions["configOverrides"]; gatewayPort?: number } = {},
): Promise<TestPlatform> {
  const dataDir = mkdtempSync(join(tmpdir(), `${name}-`));
  const mongoUrl = options.mongo ? process.env.MONGO_URL : undefined;
  if (options.mongo && !mongoUrl) throw new Error("MONGO_URL is not set: run the tests through `npm test`, whose setup starts FerretDB");
  const mongo = mongoUrl ? { url: mongoUrl, dbPrefix: `${name.replace(/\W/g, "_")}_${Date.now().toString(36)}_` } : undefined;
  const kafkaBrokers = options.kafka ? process.env.KAFKA_BROKERS : undefined;
  if (options.kafka && !kafkaBrokers) throw new Error("KAFKA_BROKERS is not set: run the tests through `npm test`, whose setup starts Kafka");
  const platform = await startPlatform({
    dataDir,
    // A port known before the start when PUBLIC_API_URL must name it (passkeys are bound to the origin).
    gatewayPort: options.gatewayPort ?? 0,
    gatewayHost: "127.0.0.1",
    adminToken: ADMIN_TOKEN,
    // TEST_PLATFORM_LOG_LEVEL=info shows the platform's logs while a test is debugged.
    logger: createLogger(name, process.env.TEST_PLATFORM_LOG_LEVEL === "info" ? "info" : "silent"),
    env: {
      OUTBOX_SWEEP_INTERVAL_MS: "500",
      // Suites run side by side: each portal page on a free port (known before the start, so mail links point at it).
      PORTAL_PORT: String(await freePort()),
      // Topics and groups of this platform alone: other suites share the cluster.
      ...(kafkaBrokers ? { KAFKA_NAMESPACE: `${name.replace(/\W/g, "_")}_${Date.now().toString(36)}` } : {}),
      ...env,
    },
    ...(mongo ? { mongoUrl: mongo.url, dbPrefix: mongo.dbPrefix } : {}),
    ...(kafkaBrokers ? { kafkaBrokers } : {}),
    ...(options.configOverrides ? { configOverrides: options.configOverrides } : {}),
  });
  const doc = (await (await fetch(`${platform.gatewayUrl}/api/v1/openapi.json`)).json()) as OpenApiDocument;
  const check = responseChecker(doc);
  let key = "";
  const call = async (method: string, path: string, opts: CallOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = {};
    const k = opts.key === undefined ? key : opts.key;
    if (opts.admin) headers.authorization = `Bearer ${ADMIN_TOKEN}`;
    else if (k) headers["x-api-key"] = k;
    let body: string | undefined;
    if (opts.raw !== undefined || opts.body !== undefined) {
      body = opts.raw ?? JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    Object.assign(headers, opts.headers);
    return sendChecked(check, platform.gatewayUrl, method, path, { headers, body });
  };
  const account = await call("POST", "/admin/v1/accounts", { admin: true, body: { name: name } });
  const created = await call("POST", `/admin/v1/accounts/${account.body.id}/api-keys`, { admin: true, body: { mode: "test" } });
  key = created.body.key;
  return {
    platform,
    mongo,
    url: platform.gatewayUrl,
    dataDir,
    accountId: account.body.id,
    key,
    call,
    close: async () => {
      await platform.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls `read` until `done` holds for its result (bounded by attempts, not by a timed assertion). */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, attempts = 200): Promise<T> {
  let value = await read();
  for (let i = 0; i < attempts && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

/** Every item of a list endpoint (`path` without limit or cursor), following next_cursor page by page. */
export async function allItems<T>(get: (path: string) => Promise<{ body: any }>, path: string): Promise<T[]> {
  const out: T[] = [];
  const sep = path.includes("?") ? "&" : "?";
  let cursor = "";
  for (;;) {
    const res = await get(`${path}${sep}limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    out.push(...(res.body.items as T[]));
    if (!res.body.next_cursor) return out;
    cursor = res.body.next_cursor;
  }
}

/** The live documents of an embedded-store datafile (later lines win; `$$deleted` removes): what the collection holds. */
export function embeddedDocs(file: string): Array<Record<string, unknown>> {
  const docs = new Map<string, Record<string, unknown>>();
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const doc = JSON.parse(line) as Record<string, unknown>;
    if (typeof doc._id !== "string") continue; // an index line
    if (doc.$$deleted === true) docs.delete(doc._id);
    else docs.set(doc._id, doc);
  }
  return [...docs.values()];
}

/**
 * What one service's own store holds in a collection now: its database on
 * the MongoDB server of a platform started with `mongo`, else its embedded
 * datafile under DATA_DIR (written once the write is in memory: a document
 * there is one the service's own reads see).
 */
export async function storedDocs(t: TestPlatform, service: string, collection: string): Promise<Array<Record<string, unknown>>> {
  if (!t.mongo) return embeddedDocs(join(t.dataDir, service, `${collection}.db`));
  const client = await MongoClient.connect(t.mongo.url, { serverSelectionTimeoutMS: 5000 });
  try {
    return (await client.db(`${t.mongo.dbPrefix}${service}`).collection(collection).find({}).toArray()) as unknown as Array<Record<string, unknown>>;
  } finally {
    await client.close();
  }
}
