import { createClient } from "@connectrpc/connect";
import { imports } from "@emailsvc/proto";
import { callHeaders } from "@emailsvc/tenancy";
import { clientClosedRequest, Problem } from "../../http/problem.js";
import { Readable } from "node:stream";
import { callOptions, requestAudit } from "../../routes/calls.js";
import { defineRoute, type RouteKit } from "../../routes/define.js";
import { nextCursor } from "../../routes/json.js";
import { actorOf, type GatewayRouterContext } from "../../http/state.js";
import type { ResourceContext } from "../resource.js";
import { csvField, importJson } from "./mapping.js";
import { IMPORT_MAX_BYTES, IMPORT_MEDIA_TYPES } from "./schemas.js";

/** What one AppendImportChunk call carries: the gateway holds at most this much of an upload. */
const CHUNK_BYTES = 1024 * 1024;
/** How long an upload may take to arrive. */
const UPLOAD_DEADLINE_MS = 60 * 60_000;
const DELIMITERS = { comma: ",", semicolon: ";", tab: "\t", pipe: "|" } as const;

interface ImportQuery {
  mode: "create" | "upsert";
  email_column: string;
  status_column?: string;
  tags_column?: string;
  locale_column?: string;
  metadata_columns?: string;
  delimiter: keyof typeof DELIMITERS;
  resubscribe: boolean;
  resubscribe_reason?: string;
  run_triggers: boolean;
}

/** `key=Header` or `Header`, comma-separated: metadata key -> column. */
function metadataColumns(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (raw ?? "").split(",")) {
    const part = item.trim();
    if (part === "") continue;
    const eq = part.indexOf("=");
    if (eq === -1) out[part] = part;
    else out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

/** The upload's format from its Content-Type (UTF-8 only), or 415. */
function formatOf(header: string | undefined): "csv" | "ndjson" {
  const [type, ...params] = (header ?? "").split(";");
  const format = IMPORT_MEDIA_TYPES[type?.trim().toLowerCase() as keyof typeof IMPORT_MEDIA_TYPES];
  const charset = params.map((p) => p.split("=")).find(([name]) => name?.trim().toLowerCase() === "charset")?.[1]?.trim().replace(/"/g, "").toLowerCase();
  if (!format || (charset !== undefined && charset !== "utf-8")) {
    throw new Problem("unsupported_media_type", "Send the file as `text/csv` or `application/x-ndjson`, in UTF-8.");
  }
  return format;
}

/** /api/v1/subscribers/imports: the upload streamed on to the subscribers service's ImportService in chunks. */
export function importRoutes(kit: RouteKit, context: ResourceContext): void {
  const transport = context.transport("subscribers");
  if (!transport) throw new Error("the import routes need the subscribers service");
  const service = createClient(imports.ImportService, transport);
  const { timeoutMs } = context;

  defineRoute(kit, "post", "/api/v1/subscribers/imports", "createImport", async (ctx) => {
    const format = formatOf(ctx.get("content-type") || undefined);
    // A file of up to 1 GiB arrives at the speed of the client's link: an hour, not the 30 s of other bodies.
    ctx.state.extendBodyDeadline?.(UPLOAD_DEADLINE_MS);
    const query = ctx.state.query as unknown as ImportQuery;
    const announced = Number(ctx.get("content-length") || "NaN");
    if (Number.isFinite(announced) && announced > IMPORT_MAX_BYTES) throw tooLarge();
    const created = await service.createImport(
      {
        format: format === "csv" ? imports.ImportFormat.CSV : imports.ImportFormat.NDJSON,
        mode: query.mode === "upsert" ? imports.ImportMode.UPSERT : imports.ImportMode.CREATE,
        columns: {
          email: query.email_column,
          status: query.status_column ?? "",
          tags: query.tags_column ?? "",
          locale: query.locale_column ?? "",
          metadata: metadataColumns(query.metadata_columns),
        },
        delimiter: DELIMITERS[query.delimiter],
        resubscribe: query.resubscribe,
        resubscribeReason: query.resubscribe_reason ?? "",
        runTriggers: query.run_triggers,
        audit: requestAudit(ctx, "import", context.clientIp),
      },
      callOptions(ctx, timeoutMs),
    );
    const jobId = created.job!.id;
    let chunks: number;
    try {
      chunks = await upload(ctx, jobId);
    } catch (err) {
      // A cut or refused upload leaves no job waiting: it fails `upload_aborted` now (the worker's reaper is the backstop).
      // Not cancelled with the request, which is over.
      await service.abortImport({ jobId }, { headers: callHeaders(callContextOf(ctx)), timeoutMs }).catch(() => undefined);
      throw err;
    }
    const started = await service.startImport({ jobId, chunkCount: BigInt(chunks) }, callOptions(ctx, timeoutMs));
    ctx.status = 202;
    ctx.set("Location", `/api/v1/subscribers/imports/${jobId}`);
    ctx.body = importJson(started.job);

    /** Streams the body on in chunks of CHUNK_BYTES, one call at a time (the request is read no faster than the service stores); how many. */
    async function upload(c: GatewayRouterContext, id: string): Promise<number> {
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      let total = 0;
      let seq = 0;
      // One set of options for every chunk: cancelled together when the client goes.
      const options = callOptions(c, timeoutMs);
      const send = async (bytes: Buffer) => {
        await service.appendImportChunk({ jobId: id, seq: BigInt(seq), data: bytes }, options);
        seq++;
      };
      const req = c.req;
      if (req.destroyed) throw clientClosedRequest();
      try {
        for await (const piece of req as AsyncIterable<Buffer>) {
          total += piece.length;
          if (total > IMPORT_MAX_BYTES) {
            req.resume();
            throw tooLarge();
          }
          pending.push(piece);
          pendingBytes += piece.length;
          while (pendingBytes >= CHUNK_BYTES) {
            const all = Buffer.concat(pending, pendingBytes);
            await send(all.subarray(0, CHUNK_BYTES));
            pending = [all.subarray(CHUNK_BYTES)];
            pendingBytes = all.length - CHUNK_BYTES;
          }
        }
      } catch (err) {
        if (err instanceof Problem || (err as { name?: string }).name === "ConnectError") throw err;
        // The client hung up mid-body.
        throw clientClosedRequest();
      }
      if (!req.complete) throw clientClosedRequest();
      if (pendingBytes > 0) await send(Buffer.concat(pending, pendingBytes));
      if (seq === 0) throw new Problem("import_empty", "The uploaded file is empty; send the file as the body.");
      return seq;
    }
  });

  defineRoute(kit, "get", "/api/v1/subscribers/imports", "listImports", async (ctx) => {
    const query = ctx.state.query as { limit: number; cursor?: string };
    const res = await service.listImports({ limit: query.limit, cursor: query.cursor ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = { items: res.jobs.map(importJson), next_cursor: nextCursor(res.nextCursor) };
  });

  defineRoute(kit, "get", "/api/v1/subscribers/imports/:id", "getImport", async (ctx) => {
    const res = await service.getImport({ id: ctx.params.id ?? "" }, callOptions(ctx, timeoutMs));
    ctx.body = importJson(res.job);
  });

  defineRoute(kit, "get", "/api/v1/subscribers/imports/:id/errors", "getImportErrors", async (ctx) => {
    const id = ctx.params.id ?? "";
    // The first page before the answer starts, so that an unknown id is a 404 problem, not a cut CSV.
    let page = await service.listImportErrors({ id, afterRow: 0n, limit: 5000 }, callOptions(ctx, timeoutMs));
    const options = callOptions(ctx, timeoutMs);
    // Streamed a page at a time: a report is as long as the file's bad rows.
    async function* lines(first: typeof page): AsyncGenerator<string> {
      yield "row,field,code,detail\r\n";
      let current = first;
      for (;;) {
        yield current.errors.map((e) => `${[String(e.row), csvField(e.field), csvField(e.code), csvField(e.detail)].join(",")}\r\n`).join("");
        if (current.nextAfterRow === 0n) return;
        current = await service.listImportErrors({ id, afterRow: current.nextAfterRow, limit: 5000 }, options);
      }
    }
    ctx.type = "text/csv; charset=utf-8";
    ctx.set("Content-Disposition", `attachment; filename="${id}-errors.csv"`);
    ctx.body = Readable.from(lines(page));
  });

  function tooLarge(): Problem {
    return new Problem("import_too_large", `An import is at most ${IMPORT_MAX_BYTES} bytes.`, { headers: { Connection: "close" } });
  }

  function callContextOf(ctx: GatewayRouterContext) {
    const auth = ctx.state.auth!;
    return { tenant: { accountId: auth.accountId, mode: auth.mode }, actor: actorOf(auth), requestId: ctx.state.requestId };
  }
}
