import { invalid } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { NO_COUNTS, validateColumns, type ImportColumns, type ImportFormat, type ImportMode } from "../domain/import.js";
import { validateResubscribe } from "../domain/suppression.js";
import type { ImportJobDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import type { ImportDeps } from "./import-deps.js";

export interface CreateImportInput {
  format: ImportFormat | undefined;
  mode: ImportMode | undefined;
  columns: ImportColumns;
  delimiter: string;
  resubscribe: boolean;
  resubscribeReason: string;
  runTriggers: boolean;
}

/**
 * A job waiting for its upload (`uploading`). Its settings are checked here,
 * before a byte is stored; the uploader's IP and user agent are kept on the
 * job for the audit records of the rows it changes.
 */
export async function createImport(deps: ImportDeps, scope: Scope, input: CreateImportInput): Promise<ImportJobDoc> {
  if (!input.format) throw invalid("format is required", [{ field: "format", description: "csv or ndjson (the Content-Type)" }]);
  const mode = input.mode ?? "create";
  const columns = validateColumns(input.format, input.columns);
  const resubscribe = validateResubscribe(input.resubscribe, input.resubscribeReason);
  const delimiter = input.delimiter === "" ? "," : input.delimiter;
  if (![",", ";", "\t", "|"].includes(delimiter)) throw invalid("delimiter is not supported", [{ field: "delimiter", description: "one of , ; | or a tab" }]);
  const now = deps.now();
  const job: Omit<ImportJobDoc, "tenant"> = {
    _id: newId("imp"),
    state: "uploading",
    format: input.format,
    mode,
    columns,
    delimiter,
    resubscribe: resubscribe !== undefined,
    resubscribe_reason: resubscribe?.reason ?? "",
    run_triggers: input.runTriggers,
    actor: scope.call.actor,
    ip: scope.origin?.ip ?? "",
    user_agent: scope.origin?.userAgent ?? "",
    chunk_count: 0,
    size_bytes: 0,
    upload_held: true,
    row: 0,
    counts: { ...NO_COUNTS },
    failure: "",
    lease_owner: "",
    lease_until: 0,
    created_at: now,
    updated_at: now,
    started_at: null,
    finished_at: null,
  };
  await scope.imports.insertOne(job);
  return { ...job, tenant: scope.imports.tenant };
}
