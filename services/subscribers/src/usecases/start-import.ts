import { AppError, invalid } from "@emailsvc/errors";
import type { ImportJobDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import { loadImport, type ImportDeps } from "./import-deps.js";

/**
 * The upload is whole: every chunk 0 .. chunkCount-1 is stored, so the job is
 * queued for the worker. Called again (a retry), it answers the job as it is.
 */
export async function startImport(deps: ImportDeps, scope: Scope, input: { jobId: string; chunkCount: number }): Promise<ImportJobDoc> {
  const job = await loadImport(scope, input.jobId);
  if (job.state !== "uploading") return job;
  if (!Number.isSafeInteger(input.chunkCount) || input.chunkCount < 0) throw invalid("chunk_count is invalid", [{ field: "chunk_count", description: "0 or more" }]);
  if (input.chunkCount === 0) {
    await failUpload(deps, scope, job._id, "empty_file");
    throw new AppError("invalid", "import_empty", "the uploaded file is empty");
  }
  const missing = await deps.spool.missing(scope.importChunks, job._id, input.chunkCount);
  if (missing > 0) {
    throw new AppError("conflict", "import_incomplete", `${missing} chunk(s) of the upload are missing`);
  }
  const now = deps.now();
  const queued = await scope.imports.updateOne({ _id: job._id, state: "uploading" }, { $set: { state: "queued", chunk_count: input.chunkCount, lease_until: 0, updated_at: now } });
  if (queued) deps.wakeWorker?.();
  return queued ?? (await loadImport(scope, job._id));
}

/** An upload that will not be finished: the job fails with `code` and its chunks go. */
export async function failUpload(deps: ImportDeps, scope: Scope, jobId: string, code: string): Promise<void> {
  const now = deps.now();
  const failed = await scope.imports.updateOne({ _id: jobId, state: "uploading" }, { $set: { state: "failed", failure: code, finished_at: now, updated_at: now } });
  if (failed) await dropUpload(deps, scope, jobId);
}

/** Drops the upload of a job that is over, then notes it gone (the worker's sweep redoes this after a crash between the two). */
export async function dropUpload(deps: ImportDeps, scope: Scope, jobId: string): Promise<void> {
  await deps.spool.drop(scope.importChunks, jobId);
  await scope.imports.updateOne({ _id: jobId, state: { $in: ["completed", "failed"] } }, { $set: { upload_held: false } });
}
