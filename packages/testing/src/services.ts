// What the tests of every service share: a store of either kind, a tenant's
// call context and its headers, and polling until something holds. One copy
// here instead of one per service's test harness.

import { mkdtempSync, rmSync } from "node:fs";
import { Writable } from "node:stream";
import pino from "pino";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "@emailsvc/ids";
import { type Logger } from "@emailsvc/telemetry";
import { callHeaders, type CallContext } from "@emailsvc/tenancy";
import { openEmbeddedStore, openMongoStore, type DocumentStore } from "@emailsvc/storage";

/** The two storage adapters every service's tests run on. */
export type StoreKind = "embedded" | "mongodb";
export const STORE_KINDS: readonly StoreKind[] = ["embedded", "mongodb"];

/** MONGO_URL, which Jest's global setup provides (a running MongoDB-compatible server). */
export function mongoUrl(): string {
  const url = process.env.MONGO_URL;
  if (!url) throw new Error("MONGO_URL is not set: run the tests through `npm test` (or jest), whose setup starts the servers");
  return url;
}

export interface TestStore {
  store: DocumentStore;
  /** Removes what the store left on disk (embedded); the caller closes the store first. */
  cleanup(): void;
}

/** A fresh store: a new database on the MongoDB-compatible server, or the embedded store in a new temporary directory. */
export async function openTestStore(kind: StoreKind, name: string): Promise<TestStore> {
  if (kind === "mongodb") {
    return { store: await openMongoStore({ url: mongoUrl(), dbName: `${name}_test_${newId("db").slice(3, 20)}` }), cleanup: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), `${name}-test-`));
  return { store: await openEmbeddedStore({ dataDir: dir }), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The call context of an API key of a new (or the given) account, in one mode. */
export function testTenant(mode: "live" | "test" = "test", accountId = newId("acc")): CallContext {
  return { tenant: { accountId, mode }, actor: "api_key:key_test", requestId: "req_test" };
}

/** Call options carrying `call` as the gateway sends it. */
export function asCall(call: CallContext): { headers: Record<string, string> } {
  return { headers: callHeaders(call) };
}

/** Polls `probe` until it gives a value (bounded by `timeoutMs`, a failure only far beyond the expected). */
export async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 15000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A pino logger that keeps its lines (parsed) for assertions. */
export function memoryLogger(service = "test"): { logger: Logger; logs: Array<Record<string, any>> } {
  const logs: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) logs.push(JSON.parse(line) as Record<string, any>);
      done();
    },
  });
  return { logger: pino({ level: "info", base: { service } }, stream) as unknown as Logger, logs };
}
