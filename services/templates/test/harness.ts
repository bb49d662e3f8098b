import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { callHeaders, createLogger, createServiceTransport, newId, type CallContext } from "@emailsvc/runtime";
import { openEmbeddedStore, openMongoStore, type DocumentStore } from "@emailsvc/storage";
import { BodyCompilerPool, inProcessCompiler } from "../src/compile-pool.js";
import { startTemplatesService, type RunningTemplatesService, type TemplatesServiceOptions } from "../src/server.js";

/** The built worker script (tests run from src; `npm test` builds first, as for every workspace package). */
export const WORKER_SCRIPT = join(__dirname, "..", "dist", "compile-worker.js");

export type StoreKind = "embedded" | "mongodb";

export function mongoUrl(): string {
  const url = process.env.MONGO_URL;
  if (!url) throw new Error("MONGO_URL is not set: run the tests through `npm test`, whose setup starts FerretDB");
  return url;
}

export interface Harness {
  service: RunningTemplatesService;
  store: DocumentStore;
  client: Client<typeof templates.TemplateService>;
  close(): Promise<void>;
}

export async function openStoreOf(kind: StoreKind): Promise<{ store: DocumentStore; cleanup: () => void }> {
  if (kind === "mongodb") {
    return { store: await openMongoStore({ url: mongoUrl(), dbName: `templates_test_${newId("db").slice(3, 20)}` }), cleanup: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), "templates-test-"));
  return { store: await openEmbeddedStore({ dataDir: dir }), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function startHarness(kind: StoreKind, options: Partial<TemplatesServiceOptions> = {}): Promise<Harness> {
  const { store, cleanup } = await openStoreOf(kind);
  // Compiles run in worker threads, as in production.
  const compiler = existsSync(WORKER_SCRIPT) ? new BodyCompilerPool({ script: WORKER_SCRIPT, size: 2 }) : inProcessCompiler();
  const service = await startTemplatesService({ store, logger: createLogger("templates", "silent"), port: 0, compiler, ...options });
  const transport = createServiceTransport(service.url);
  return {
    service,
    store,
    client: createClient(templates.TemplateService, transport),
    async close() {
      await service.close();
      await store.close();
      cleanup();
    },
  };
}

export function tenant(mode: "live" | "test" = "test", accountId = newId("acc")): CallContext {
  return { tenant: { accountId, mode }, actor: "api_key:key_test", requestId: "req_test" };
}

export function as(call: CallContext) {
  return { headers: callHeaders(call) };
}

export async function code(promise: Promise<unknown>): Promise<Code> {
  try {
    await promise;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  throw new Error("expected the call to fail");
}

/** A small valid template body; `inner` goes into one mj-text. */
export function mjmlWith(inner: string, extra = ""): string {
  return [
    "<mjml>",
    "  <mj-body>",
    extra,
    "    <mj-section>",
    "      <mj-column>",
    `        <mj-text>${inner}</mj-text>`,
    "      </mj-column>",
    "    </mj-section>",
    "  </mj-body>",
    "</mjml>",
  ].join("\n");
}
