import { notFound } from "@emailsvc/errors";
import type { ImportSpool } from "../storage/import-spool.js";
import type { OutboxRelay } from "@emailsvc/outbox";
import type { ImportJobDoc, SubscriberDoc } from "../storage/documents.js";
import type { Deps, Scope } from "./deps.js";

/** What the import use cases need besides every use case's Deps: where uploads are kept. */
export interface ImportDeps extends Deps {
  /** The relay itself: a batch's outboxes are carried out together (afterWriteMany). */
  relay: OutboxRelay<SubscriberDoc>;
  spool: ImportSpool;
  /** Tells this process's import worker a job was queued (it polls otherwise). */
  wakeWorker?: () => void;
  /** Rows handled and checkpointed together (IMPORT_BATCH_ROWS, default IMPORT_LIMITS.batchRows). */
  batchRows: number;
}

/** A job of the scope's tenant, or 404 `import_not_found` (also for another tenant's ids). */
export async function loadImport(scope: Scope, id: string): Promise<ImportJobDoc> {
  const job = await scope.imports.findOne({ _id: id });
  if (!job) throw notFound("import");
  return job;
}
