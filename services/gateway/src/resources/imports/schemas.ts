import { errors, json, nullableTimestamp, page, param, pathParam, ref, serviceErrors, timestamp } from "../../openapi/kit.js";
import type { JsonSchema, ParameterObject, Paths } from "../../openapi/types.js";

// Bulk imports' part of the OpenAPI document (issue 18).

/** Largest upload the gateway passes on (the subscribers service's IMPORT_LIMITS.fileBytes). */
export const IMPORT_MAX_BYTES = 1024 * 1024 * 1024;
/** The media types an upload may have. */
export const IMPORT_MEDIA_TYPES = { "text/csv": "csv", "application/x-ndjson": "ndjson" } as const;

const columnName = (what: string) => ({ type: "string", minLength: 1, maxLength: 200, description: what });

export const schemas: Record<string, JsonSchema> = {
  ImportState: {
    type: "string",
    enum: ["uploading", "queued", "running", "completed", "failed", "cancelled"],
    description:
      "`uploading` while the file arrives, `queued` once it is stored whole, `running` while a worker reads it (a restart resumes from the last batch), then `completed` or `failed` (`failure` says why: `upload_aborted` when the upload was cut, `upload_abandoned`, `missing_columns`, `missing_header`, `too_many_rows`, …). `cancelled` is reserved.",
  },
  Import: {
    type: "object",
    additionalProperties: false,
    required: ["id", "state", "format", "mode", "rows_read", "created", "updated", "skipped", "failed", "size_bytes", "resubscribe", "run_triggers", "failure", "created_at", "started_at", "finished_at"],
    properties: {
      id: { type: "string", readOnly: true, description: "The job's id (`imp_…`)." },
      state: ref("ImportState"),
      format: { type: "string", enum: ["csv", "ndjson"] },
      mode: { type: "string", enum: ["create", "upsert"] },
      rows_read: { type: "integer", minimum: 0, description: "Data rows read so far (a CSV's header row is not one)." },
      created: { type: "integer", minimum: 0, description: "Subscribers created." },
      updated: { type: "integer", minimum: 0, description: "Present subscribers merged with their row (`upsert`)." },
      skipped: { type: "integer", minimum: 0, description: "Rows skipped: `exists` (create mode), `duplicate_in_file`, `suppressed` (in the report)." },
      failed: { type: "integer", minimum: 0, description: "Rows that failed a check (in the report)." },
      size_bytes: { type: "integer", minimum: 0, description: "Bytes uploaded." },
      resubscribe: { type: "boolean" },
      run_triggers: { type: "boolean" },
      failure: { type: ["string", "null"], description: "Why the job failed; null unless `failed`." },
      created_at: timestamp("When the job was made (RFC 3339, UTC)."),
      started_at: nullableTimestamp("When a worker first took it; null before."),
      finished_at: nullableTimestamp("When it completed or failed; null before."),
    },
  },
  ImportPage: page("Import", "A page of the account's imports, newest first."),
};

export const parameters: Record<string, ParameterObject> = {
  ImportId: pathParam("id", "The import's id.", { type: "string", pattern: "^imp_[0-9a-hjkmnp-tv-z]{26}$" }),
};

const query = (name: string, description: string, schema: JsonSchema): ParameterObject => ({ name, in: "query", description, schema });

export const paths: Paths = {
  "/api/v1/subscribers/imports": {
    post: {
      operationId: "createImport",
      summary: "Import subscribers from a file",
      description:
        "The body is the file itself, streamed: CSV (`Content-Type: text/csv`, a header row, columns chosen by the `*_column` parameters) or NDJSON (`application/x-ndjson`, one JSON object per line with `email` and optionally `status`, `tags`, `metadata`, `locale`), up to 1 GiB. The gateway passes it on in chunks of 1 MiB and never holds it; it is stored whole before any row is handled, so the answer (202) comes once the upload is complete, with the job to poll. Each row is checked like a single create; a bad row goes to the report (`/errors`) and never stops the job. `mode=create` skips addresses present (`exists`); `mode=upsert` adds the row's tags to them, replaces the metadata keys the row gives, and sets the status only when a status column is mapped. Within the file the first row of an address wins (later ones `duplicate_in_file`). Addresses on the suppression list (erased ones included) are skipped `suppressed`, unless `resubscribe=true` with a `resubscribe_reason` says the people opted in again (as on a single create, audited). Every change is audited with source `import` and the job id. `subscriber.created` triggers fire for imported subscribers only with `run_triggers=true`; webhooks get their events either way. Limits: 64 Ki characters and 200 columns per row, 2,000,000 rows per job.",
      tags: ["Imports"],
      parameters: [
        query("mode", "`create` (default) or `upsert`.", { type: "string", enum: ["create", "upsert"], default: "create" }),
        query("email_column", "CSV: the header of the address column (default `email`).", { ...columnName("Header name."), default: "email" }),
        query("status_column", "CSV: the header of a status column (active, unsubscribed, bounced, complained); none by default.", columnName("Header name.")),
        query("tags_column", "CSV: the header of a column of tag names separated by `;` or `,`; none by default.", columnName("Header name.")),
        query("locale_column", "CSV: the header of a locale column; none by default.", columnName("Header name.")),
        query(
          "metadata_columns",
          "CSV: columns imported as metadata, comma-separated; `key=Header` names the key, a bare `Header` uses the header as the key. Empty cells set nothing.",
          { type: "string", minLength: 1, maxLength: 4000 },
        ),
        query("delimiter", "CSV: the field separator: `comma` (default), `semicolon`, `tab` or `pipe`.", { type: "string", enum: ["comma", "semicolon", "tab", "pipe"], default: "comma" }),
        query("resubscribe", "The people of this file opted in again: suppressed and erased addresses are imported (needs `resubscribe_reason`).", { type: "boolean", default: false }),
        query("resubscribe_reason", "Why they may be mailed again (kept in the audit trail).", { type: "string", minLength: 1, maxLength: 500 }),
        query("run_triggers", "Fire `subscriber.created` triggers for the subscribers created.", { type: "boolean", default: false }),
      ],
      requestBody: {
        required: true,
        // The file's bytes as they are (no schema: any text is a file; its rows are checked one by one, the bad ones reported).
        content: {
          "text/csv": { schema: {} },
          "application/x-ndjson": { schema: {} },
        },
      },
      responses: {
        "202": { ...json(ref("Import"), "The upload is stored; the job is queued. Poll it with its id."), headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" }, Location: { description: "The job's URL.", schema: { type: "string" } } } },
        ...errors("BadRequest", "PayloadTooLarge", "UnsupportedMediaType", ...serviceErrors),
      },
    },
    get: {
      operationId: "listImports",
      summary: "List imports",
      tags: ["Imports"],
      parameters: [param("Limit"), param("Cursor")],
      responses: { "200": json(ref("ImportPage"), "A page of imports."), ...errors("BadRequest", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/imports/{id}": {
    get: {
      operationId: "getImport",
      summary: "Get an import's progress",
      tags: ["Imports"],
      parameters: [param("ImportId")],
      responses: { "200": json(ref("Import"), "The job."), ...errors("BadRequest", "NotFound", ...serviceErrors) },
    },
  },
  "/api/v1/subscribers/imports/{id}/errors": {
    get: {
      operationId: "getImportErrors",
      summary: "Download an import's report",
      description:
        "CSV with the header `row,field,code,detail`: one line per row that failed a check or was skipped, in row order (`row` counts data rows from 1; for NDJSON it is the line number). It names the field and the rule, never the row's values: the customer has the file, and the report holds no personal data for us to keep or leak. Codes: `invalid_email`, `invalid_status`, `invalid_tags`, `too_many_tags`, `invalid_metadata`, `metadata_too_large`, `invalid_locale`, `invalid_json`, `unknown_field`, `row_too_long`, `exists`, `duplicate_in_file`, `suppressed`, `conflict`.",
      tags: ["Imports"],
      parameters: [param("ImportId")],
      responses: {
        "200": { description: "The report so far (complete once the job is).", headers: { "X-Request-Id": { $ref: "#/components/headers/RequestId" } }, content: { "text/csv": { schema: { type: "string" } } } },
        ...errors("BadRequest", "NotFound", ...serviceErrors),
      },
    },
  },
};

