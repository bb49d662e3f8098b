import { mkdir, rm, stat } from "node:fs/promises";
import * as path from "node:path";
import { DuplicateKeyError, readFileIfPresent, tenantFilePath, writeFileWhole, type TenantCollection } from "@emailsvc/storage";
import type { ImportChunkDoc } from "./documents.js";

// Where an upload's chunks are kept until its job is done: stored before any
// row is processed, so that a restart resumes from them (issue 18). The
// embedded store holds every document in memory, so there they are files
// (DATA_DIR/imports/<account>/<mode>/<job>/<seq>.part, as delivery keeps
// sandbox bodies beside that store); on MongoDB they are documents of
// `import_chunks` (the database holds them, not this process).

export interface ImportSpool {
  /** Keeps chunk `seq` of a job; true when it was not kept already (the same seq again is a no-op). */
  put(chunks: TenantCollection<ImportChunkDoc>, jobId: string, seq: number, data: Uint8Array): Promise<boolean>;
  /** The chunk, or undefined when it is not there. */
  get(chunks: TenantCollection<ImportChunkDoc>, jobId: string, seq: number): Promise<Buffer | undefined>;
  /** How many of chunks 0 .. count-1 are missing. */
  missing(chunks: TenantCollection<ImportChunkDoc>, jobId: string, count: number): Promise<number>;
  /** Deletes a job's chunks (done, failed or aborted). */
  drop(chunks: TenantCollection<ImportChunkDoc>, jobId: string): Promise<void>;
}

const JOB_ID = /^imp_[A-Za-z0-9]+$/;

/** The embedded store's spool: one file per chunk, written whole (a temporary file renamed). */
export class FileSpool implements ImportSpool {
  constructor(private readonly dir: string) {}

  private jobDir(tenant: string, jobId: string): string {
    if (!JOB_ID.test(jobId)) throw new TypeError("import spool: unexpected job id");
    return tenantFilePath(this.dir, tenant, jobId);
  }

  private file(tenant: string, jobId: string, seq: number): string {
    if (!Number.isSafeInteger(seq) || seq < 0) throw new TypeError("import spool: unexpected chunk number");
    return path.join(this.jobDir(tenant, jobId), `${seq}.part`);
  }

  async put(chunks: TenantCollection<ImportChunkDoc>, jobId: string, seq: number, data: Uint8Array): Promise<boolean> {
    const file = this.file(chunks.tenant, jobId, seq);
    if (await exists(file)) return false;
    await mkdir(path.dirname(file), { recursive: true });
    // Whole: a crash mid-write leaves a temporary file, never a cut chunk.
    await writeFileWhole(file, data);
    return true;
  }

  get(chunks: TenantCollection<ImportChunkDoc>, jobId: string, seq: number): Promise<Buffer | undefined> {
    return readFileIfPresent(this.file(chunks.tenant, jobId, seq));
  }

  async missing(chunks: TenantCollection<ImportChunkDoc>, jobId: string, count: number): Promise<number> {
    let missing = 0;
    for (let seq = 0; seq < count; seq++) if (!(await exists(this.file(chunks.tenant, jobId, seq)))) missing++;
    return missing;
  }

  async drop(chunks: TenantCollection<ImportChunkDoc>, jobId: string): Promise<void> {
    await rm(this.jobDir(chunks.tenant, jobId), { recursive: true, force: true });
  }
}

/** MongoDB's spool: one document per chunk, `_id` `<job>:<seq>` (a repeated seq clashes and is skipped). */
export class DocumentSpool implements ImportSpool {
  async put(chunks: TenantCollection<ImportChunkDoc>, jobId: string, seq: number, data: Uint8Array): Promise<boolean> {
    try {
      await chunks.insertOne({ _id: `${jobId}:${seq}`, job_id: jobId, seq, data: Buffer.from(data).toString("base64") });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  async get(chunks: TenantCollection<ImportChunkDoc>, jobId: string, seq: number): Promise<Buffer | undefined> {
    const doc = await chunks.findOne({ _id: `${jobId}:${seq}` });
    return doc ? Buffer.from(doc.data, "base64") : undefined;
  }

  async missing(chunks: TenantCollection<ImportChunkDoc>, jobId: string, count: number): Promise<number> {
    return count - (await chunks.count({ job_id: jobId, seq: { $lt: count } }));
  }

  async drop(chunks: TenantCollection<ImportChunkDoc>, jobId: string): Promise<void> {
    await chunks.deleteMany({ job_id: jobId });
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}
