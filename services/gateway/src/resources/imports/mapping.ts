import { imports } from "@emailsvc/proto";
import { rfc3339, rfc3339OrNull, stringOrNull } from "../../routes/json.js";

// Proto import jobs <-> the REST API's JSON.

const STATE: Record<imports.ImportState, string | undefined> = {
  [imports.ImportState.UNSPECIFIED]: undefined,
  [imports.ImportState.UPLOADING]: "uploading",
  [imports.ImportState.QUEUED]: "queued",
  [imports.ImportState.RUNNING]: "running",
  [imports.ImportState.COMPLETED]: "completed",
  [imports.ImportState.FAILED]: "failed",
  [imports.ImportState.CANCELLED]: "cancelled",
};

export function importJson(job: imports.ImportJob | undefined) {
  if (!job) throw new Error("the service returned no import");
  const state = STATE[job.state];
  if (!state) throw new Error(`the service returned import state ${job.state}`);
  const counts = job.counts;
  return {
    id: job.id,
    state,
    format: job.format === imports.ImportFormat.NDJSON ? "ndjson" : "csv",
    mode: job.mode === imports.ImportMode.UPSERT ? "upsert" : "create",
    rows_read: Number(counts?.rowsRead ?? 0n),
    created: Number(counts?.created ?? 0n),
    updated: Number(counts?.updated ?? 0n),
    skipped: Number(counts?.skipped ?? 0n),
    failed: Number(counts?.failed ?? 0n),
    size_bytes: Number(job.sizeBytes),
    resubscribe: job.resubscribe,
    run_triggers: job.runTriggers,
    failure: stringOrNull(job.failure),
    created_at: rfc3339(job.createdAt, "created_at"),
    started_at: rfc3339OrNull(job.startedAt),
    finished_at: rfc3339OrNull(job.finishedAt),
  };
}

/** A report line's field, quoted when it holds a separator, a quote or a line break (RFC 4180). */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}
