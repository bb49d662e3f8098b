import { invalid } from "@emailsvc/errors";
import type { ImportErrorDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import { loadImport } from "./import-deps.js";

/** A report row's `_id`: the job and the row number padded, so that ids sort by row. */
export function reportId(jobId: string, row: number): string {
  return `${jobId}:${String(row).padStart(10, "0")}`;
}

/** A page of a job's report in row order, after `afterRow`; `nextAfterRow` 0 when it is the last. */
export async function listImportErrors(scope: Scope, input: { id: string; afterRow: number; limit: number }): Promise<{ items: ImportErrorDoc[]; nextAfterRow: number }> {
  const job = await loadImport(scope, input.id);
  if (!Number.isSafeInteger(input.afterRow) || input.afterRow < 0) throw invalid("after_row is invalid", [{ field: "after_row", description: "0 or more" }]);
  const limit = Math.min(Math.max(input.limit || 1000, 1), 5000);
  const docs = await scope.importErrors.find({ job_id: job._id, _id: { $gt: reportId(job._id, input.afterRow), $lt: `${job._id};` } }, { sort: { _id: 1 }, limit: limit + 1 });
  const items = docs.slice(0, limit);
  return { items, nextAfterRow: docs.length > limit ? items[items.length - 1]!.row : 0 };
}
