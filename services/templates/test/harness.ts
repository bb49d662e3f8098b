import { existsSync } from "node:fs";
import { join } from "node:path";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { createLogger } from "@emailsvc/telemetry";
import type { DocumentStore } from "@emailsvc/storage";
import { BodyCompilerPool, inProcessCompiler } from "../src/compile-pool.js";
import { startTemplatesService, type RunningTemplatesService, type TemplatesServiceOptions } from "../src/server.js";
import { openTestStore, type StoreKind } from "@emailsvc/testing";

// The kit's pieces every service's tests share (packages/testing, services.ts).
export { asCall as as, mongoUrl, testTenant as tenant, waitFor, type StoreKind } from "@emailsvc/testing";

/** The built worker script (tests run from src; `npm test` builds first, as for every workspace package). */
export const WORKER_SCRIPT = join(__dirname, "..", "dist", "compile-worker.js");

export interface Harness {
  service: RunningTemplatesService;
  store: DocumentStore;
  client: Client<typeof templates.TemplateService>;
  close(): Promise<void>;
}

export async function startHarness(kind: StoreKind, options: Partial<TemplatesServiceOptions> = {}): Promise<Harness> {
  const { store, cleanup } = await openTestStore(kind, "templates");
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
