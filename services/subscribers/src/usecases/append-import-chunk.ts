import { AppError, invalid } from "@emailsvc/errors";
import { IMPORT_LIMITS } from "../domain/import.js";
import type { Scope } from "./deps.js";
import { loadImport, type ImportDeps } from "./import-deps.js";

/** Keeps one chunk of a job's upload; the same seq again changes nothing (a retried call). */
export async function appendImportChunk(deps: ImportDeps, scope: Scope, input: { jobId: string; seq: number; data: Uint8Array }): Promise<void> {
  const job = await loadImport(scope, input.jobId);
  if (job.state !== "uploading") throw new AppError("conflict", "import_not_uploading", `the import is ${job.state}: it takes no more chunks`);
  if (!Number.isSafeInteger(input.seq) || input.seq < 0) throw invalid("seq is invalid", [{ field: "seq", description: "0 or more" }]);
  if (input.data.byteLength === 0 || input.data.byteLength > IMPORT_LIMITS.chunkBytes) {
    throw invalid("chunk size is invalid", [{ field: "data", description: `1 to ${IMPORT_LIMITS.chunkBytes} bytes` }]);
  }
  if (job.size_bytes + input.data.byteLength > IMPORT_LIMITS.fileBytes) {
    throw new AppError("too_large", "import_too_large", `an import is at most ${IMPORT_LIMITS.fileBytes} bytes`);
  }
  const added = await deps.spool.put(scope.importChunks, job._id, input.seq, input.data);
  if (!added) return;
  const counted = await scope.imports.updateOne(
    { _id: job._id, state: "uploading" },
    { $inc: { size_bytes: input.data.byteLength }, $set: { updated_at: deps.now() } },
  );
  if (!counted) {
    // The upload was failed while this chunk was being stored (the client went away with this call in flight):
    // failUpload may already have dropped the job's chunks, so this one would stay behind. Drop them again.
    await deps.spool.drop(scope.importChunks, job._id);
    throw new AppError("conflict", "import_not_uploading", "the import stopped taking chunks while this one was stored");
  }
}
