import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { imports, type AuditContext } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import { validateAudit } from "../domain/audit.js";
import type { ImportFormat, ImportMode, ImportState } from "../domain/import.js";
import type { ImportJobDoc } from "../storage/documents.js";
import type { Scope } from "../usecases/deps.js";
import type { ImportDeps } from "../usecases/import-deps.js";
import { abortImport } from "../usecases/abort-import.js";
import { appendImportChunk } from "../usecases/append-import-chunk.js";
import { createImport } from "../usecases/create-import.js";
import { getImport } from "../usecases/get-import.js";
import { listImportErrors } from "../usecases/list-import-errors.js";
import { listImports } from "../usecases/list-imports.js";
import { startImport } from "../usecases/start-import.js";

// ImportService: proto in, use case, proto out.

const FORMAT_FROM: Partial<Record<imports.ImportFormat, ImportFormat>> = { [imports.ImportFormat.CSV]: "csv", [imports.ImportFormat.NDJSON]: "ndjson" };
const FORMAT_TO: Record<ImportFormat, imports.ImportFormat> = { csv: imports.ImportFormat.CSV, ndjson: imports.ImportFormat.NDJSON };
const MODE_FROM: Partial<Record<imports.ImportMode, ImportMode>> = { [imports.ImportMode.CREATE]: "create", [imports.ImportMode.UPSERT]: "upsert" };
const MODE_TO: Record<ImportMode, imports.ImportMode> = { create: imports.ImportMode.CREATE, upsert: imports.ImportMode.UPSERT };
const STATE_TO: Record<ImportState, imports.ImportState> = {
  uploading: imports.ImportState.UPLOADING,
  queued: imports.ImportState.QUEUED,
  running: imports.ImportState.RUNNING,
  completed: imports.ImportState.COMPLETED,
  failed: imports.ImportState.FAILED,
  cancelled: imports.ImportState.CANCELLED,
};

export function importJobToProto(job: ImportJobDoc): imports.ImportJob {
  return create(imports.ImportJobSchema, {
    id: job._id,
    state: STATE_TO[job.state],
    format: FORMAT_TO[job.format],
    mode: MODE_TO[job.mode],
    counts: {
      rowsRead: BigInt(job.counts.rows_read),
      created: BigInt(job.counts.created),
      updated: BigInt(job.counts.updated),
      skipped: BigInt(job.counts.skipped),
      failed: BigInt(job.counts.failed),
    },
    sizeBytes: BigInt(job.size_bytes),
    resubscribe: job.resubscribe,
    runTriggers: job.run_triggers,
    failure: job.failure,
    createdAt: timestampFromMs(job.created_at),
    ...(job.started_at !== null ? { startedAt: timestampFromMs(job.started_at) } : {}),
    ...(job.finished_at !== null ? { finishedAt: timestampFromMs(job.finished_at) } : {}),
    columns: job.columns,
  });
}

export function importRoutes(deps: ImportDeps, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  // An import's changes are audited with source `import` (and the job id); the uploader's IP and user agent are kept for them.
  const audited = (ctx: HandlerContext, audit: AuditContext | undefined): Scope => {
    const origin = validateAudit(audit);
    return { ...scopeOf(readCallContext(ctx)), origin: { ...origin, source: "import" } };
  };
  const plain = (ctx: HandlerContext): Scope => scopeOf(readCallContext(ctx));
  return (router) => {
    router.service(imports.ImportService, {
      async createImport(req, ctx) {
        const job = await createImport(deps, audited(ctx, req.audit), {
          format: FORMAT_FROM[req.format],
          mode: MODE_FROM[req.mode],
          columns: { email: req.columns?.email ?? "", status: req.columns?.status ?? "", tags: req.columns?.tags ?? "", locale: req.columns?.locale ?? "", metadata: { ...(req.columns?.metadata ?? {}) } },
          delimiter: req.delimiter,
          resubscribe: req.resubscribe,
          resubscribeReason: req.resubscribeReason,
          runTriggers: req.runTriggers,
        });
        return { job: importJobToProto(job) };
      },
      async appendImportChunk(req, ctx) {
        await appendImportChunk(deps, plain(ctx), { jobId: req.jobId, seq: Number(req.seq), data: req.data });
        return {};
      },
      async startImport(req, ctx) {
        return { job: importJobToProto(await startImport(deps, plain(ctx), { jobId: req.jobId, chunkCount: Number(req.chunkCount) })) };
      },
      async abortImport(req, ctx) {
        await abortImport(deps, plain(ctx), req.jobId);
        return {};
      },
      async getImport(req, ctx) {
        return { job: importJobToProto(await getImport(plain(ctx), req.id)) };
      },
      async listImports(req, ctx) {
        const page = await listImports(plain(ctx), { limit: req.limit, cursor: req.cursor });
        return { jobs: page.items.map(importJobToProto), nextCursor: page.nextCursor };
      },
      async listImportErrors(req, ctx) {
        const page = await listImportErrors(plain(ctx), { id: req.id, afterRow: Number(req.afterRow), limit: req.limit });
        return { errors: page.items.map((e) => ({ row: BigInt(e.row), field: e.field, code: e.code, detail: e.detail })), nextAfterRow: BigInt(page.nextAfterRow) };
      },
    });
  };
}
