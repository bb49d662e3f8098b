import { unlink, writeFile as writeFileCallback } from "node:fs";
import { mkdir, readdir, stat } from "node:fs/promises";
import * as path from "node:path";
import { promisify } from "node:util";
import { DuplicateKeyError, readFileIfPresent, tenantFilePath, writeFileWhole, type CrossTenantCollection, type TenantCollection } from "@emailsvc/storage";
import type { SandboxBody, SandboxMessageDoc } from "./documents.js";

// What the sandbox provider keeps, and for how long (issue 16, defect 2: one
// test-key campaign to 50,000 took the process from 1.2 to 2.3 GB, for ever,
// because every rendered message was a document of the embedded store, which
// holds every document in memory).
//
//  - Bounded in time: a message is readable for `retentionMs`
//    (SANDBOX_RETENTION_HOURS, 72 h); a sweep deletes older ones.
//  - Bounded per tenant: at most `maxPerTenant` (SANDBOX_MAX_MESSAGES_PER_TENANT,
//    10,000) per account and mode; past it those kept longest ago go first, a
//    tenth at a time (one count, one sorted read and a delete per batch of
//    500, not per message).
//  - Bodies off the heap: on the embedded store the row holds sender,
//    recipient, subject and time only; HTML, text and headers are a file each,
//    DATA_DIR/sandbox/<account>/<mode>/<email id>.json, created before its
//    row (so nobody reads one being written; a resend keeps a whole one and
//    replaces one a crash cut). On MongoDB (no `bodiesDir`) the body stays in
//    the row: the database holds it, not this process.
//  - Erasure (erase-subscriber.ts) deletes an email's body, then its row: a
//    crash in between leaves a row without a body (answered as expired),
//    never a body nobody can find.

/** Default of SANDBOX_RETENTION_HOURS. */
export const DEFAULT_SANDBOX_RETENTION_MS = 72 * 3_600_000;
/** Default of SANDBOX_MAX_MESSAGES_PER_TENANT. */
export const DEFAULT_SANDBOX_MAX_PER_TENANT = 10_000;
/** How often expired messages are looked for. */
const DEFAULT_SWEEP_INTERVAL_MS = 10 * 60_000;
/** Rows deleted per query of a sweep or a trim. */
const BATCH = 500;

export interface SandboxSettings {
  /** How long a kept message stays readable (default 72 h). */
  retentionMs?: number;
  /** Most messages kept per tenant; the oldest go first (default 10,000). */
  maxPerTenant?: number;
  /** Where bodies go as files (the embedded store: DATA_DIR/sandbox); unset: in the row (MongoDB). */
  bodiesDir?: string | undefined;
  /** How often expired messages are deleted (default 10 min). */
  sweepIntervalMs?: number;
  /** Clock of retention (tests). */
  now?: () => number;
}

/** A kept message as GetSandboxMessage shows it. */
export interface SandboxMessage extends SandboxBody {
  emailId: string;
  from: string;
  to: string;
  subject: string;
  capturedAt: number;
}

/** What GetSandboxMessage finds: the message, one no longer kept (retention, the cap, an erasure), or none. */
export type SandboxLookup = SandboxMessage | "expired" | undefined;

/** The sandbox's messages of one tenant: what the request path and the erasure get. */
export interface TenantSandbox {
  get(emailId: string): Promise<SandboxLookup>;
  /** The kept subjects of these emails (the export, for emails sent before the email record kept it). */
  subjects(emailIds: readonly string[]): Promise<Map<string, string>>;
  /** Deletes the kept messages of these emails, bodies first. */
  deleteForEmails(emailIds: readonly string[]): Promise<void>;
}

/** Every tenant's kept messages: the sandbox provider's store, with its retention sweep and per-tenant cap. */
export class SandboxArchive {
  readonly retentionMs: number;
  readonly maxPerTenant: number;
  private readonly bodies: BodyFiles | undefined;
  private readonly now: () => number;
  private readonly sweepIntervalMs: number;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;
  /** Messages each tenant has, as this process last counted them plus what it kept since. */
  private readonly counted = new Map<string, number>();
  private readonly trimming = new Map<string, Promise<void>>();

  constructor(
    private readonly rows: CrossTenantCollection<SandboxMessageDoc>,
    settings: SandboxSettings = {},
    private readonly onError: (what: string, err: unknown) => void = () => {},
  ) {
    this.retentionMs = settings.retentionMs ?? DEFAULT_SANDBOX_RETENTION_MS;
    this.maxPerTenant = settings.maxPerTenant ?? DEFAULT_SANDBOX_MAX_PER_TENANT;
    if (!(this.retentionMs > 0) || !Number.isSafeInteger(this.maxPerTenant) || this.maxPerTenant < 1) {
      throw new RangeError("the sandbox needs a positive retention and a positive maximum per tenant");
    }
    this.bodies = settings.bodiesDir !== undefined ? new BodyFiles(settings.bodiesDir) : undefined;
    this.now = settings.now ?? Date.now;
    this.sweepIntervalMs = settings.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  }

  /** Starts the retention sweep: once now (messages kept before a restart), then every sweepIntervalMs. */
  start(): void {
    if (this.sweepTimer) return;
    const run = () => void this.sweep().catch((err: unknown) => this.onError("sandbox retention sweep failed", err));
    run();
    this.sweepTimer = setInterval(run, this.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    await Promise.allSettled([this.sweeping, ...this.trimming.values()]);
  }

  /**
   * Keeps one email's message in its tenant; a message already kept for it
   * (a resend after a crash) stays as it was. Answers whether this call kept it.
   */
  async keep(tenant: string, message: SandboxMessage): Promise<boolean> {
    const { html, text, headers } = message;
    const row: Omit<SandboxMessageDoc, "tenant"> = {
      _id: message.emailId,
      from: message.from,
      to: message.to,
      subject: message.subject,
      captured_at: message.capturedAt,
      ...(this.bodies ? {} : { body: { html, text, headers } }),
    };
    // The body first: a row is never without the body it was kept with.
    await this.bodies?.put(tenant, message.emailId, { html, text, headers });
    try {
      await this.rows.forTenant(tenant).insertOne(row);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      return false;
    }
    await this.kept(tenant);
    return true;
  }

  /** One tenant's view (the request path, the erasure). */
  forTenant(tenant: string): TenantSandbox {
    const rows = this.rows.forTenant(tenant);
    return {
      get: async (emailId) => {
        const row = await rows.findOne({ _id: emailId });
        if (!row) return undefined;
        if (row.captured_at < this.now() - this.retentionMs) return "expired";
        const body = row.body ?? legacyBody(row) ?? (await this.bodies?.get(tenant, emailId));
        if (!body) return "expired";
        return { emailId: row._id, from: row.from, to: row.to, subject: row.subject, capturedAt: row.captured_at, ...body };
      },
      subjects: async (emailIds) => {
        const subjects = new Map<string, string>();
        for (let i = 0; i < emailIds.length; i += BATCH) {
          for (const row of await rows.find({ _id: { $in: emailIds.slice(i, i + BATCH) } })) subjects.set(row._id, row.subject);
        }
        return subjects;
      },
      deleteForEmails: (emailIds) => this.remove(rows, emailIds),
    };
  }

  /** Bodies, then rows. */
  private async remove(rows: TenantCollection<SandboxMessageDoc>, emailIds: readonly string[]): Promise<void> {
    if (emailIds.length === 0) return;
    await this.bodies?.delete(rows.tenant, emailIds);
    const deleted = await rows.deleteMany({ _id: { $in: [...emailIds] } });
    const known = this.counted.get(rows.tenant);
    if (known !== undefined) this.counted.set(rows.tenant, Math.max(0, known - deleted));
  }

  /** After a message was kept: past the cap, the tenant's oldest go (one trim at a time per tenant). */
  private async kept(tenant: string): Promise<void> {
    const known = this.counted.get(tenant);
    const count = known === undefined ? await this.rows.forTenant(tenant).count({}) : known + 1;
    this.counted.set(tenant, count);
    if (count <= this.maxPerTenant || this.trimming.has(tenant)) return;
    const run = this.trim(tenant).finally(() => this.trimming.delete(tenant));
    this.trimming.set(tenant, run);
    await run;
  }

  /**
   * Deletes the tenant's messages kept longest ago (by `captured_at`, not by
   * email id: a campaign's email ids are minted when its audience is copied,
   * so a campaign resumed after a long pause sends old ids last, and they
   * would go first) down to a tenth below the cap, until a count finds it
   * within the cap (messages kept meanwhile are counted too). One sorted read
   * per round (the index by tenant and time on MongoDB; the tenant's rows
   * sorted in memory on the embedded store, at most the cap and what came
   * meanwhile), then deletes in batches.
   */
  private async trim(tenant: string): Promise<void> {
    const rows = this.rows.forTenant(tenant);
    const target = this.maxPerTenant - Math.floor(this.maxPerTenant / 10);
    for (let count = await rows.count({}); count > this.maxPerTenant; count = await rows.count({})) {
      const oldest = await rows.find({}, { sort: { captured_at: 1, _id: 1 }, limit: count - target });
      if (oldest.length === 0) break;
      for (let i = 0; i < oldest.length; i += BATCH) await this.remove(rows, oldest.slice(i, i + BATCH).map((row) => row._id));
    }
    this.counted.set(tenant, await rows.count({}));
  }

  /** Deletes every message older than the retention (each tenant's by itself), and body files left without a row; answers how many rows went. */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<number> {
    const cutoff = this.now() - this.retentionMs;
    let deleted = 0;
    for (;;) {
      const expired = await this.rows.find({ captured_at: { $lt: cutoff } }, { sort: { captured_at: 1 }, limit: BATCH });
      if (expired.length === 0) break;
      const byTenant = new Map<string, string[]>();
      for (const row of expired) byTenant.set(row.tenant, [...(byTenant.get(row.tenant) ?? []), row._id]);
      for (const [tenant, ids] of byTenant) await this.remove(this.rows.forTenant(tenant), ids);
      deleted += expired.length;
      if (expired.length < BATCH) break;
    }
    // A body whose row never came (a crash between the two) is found by its age alone.
    await this.bodies?.deleteOlderThan(cutoff);
    return deleted;
  }
}

/** A row kept before bodies moved out of it held them at its top level. */
function legacyBody(row: SandboxMessageDoc): SandboxBody | undefined {
  const old = row as SandboxMessageDoc & Partial<SandboxBody>;
  return typeof old.html === "string" ? { html: old.html, text: old.text ?? "", headers: old.headers ?? {} } : undefined;
}

const EMAIL_ID = /^eml_[A-Za-z0-9]+$/;
const BODY_FILE = /^eml_[A-Za-z0-9]+\.json$/;

/** Message bodies as files: <dir>/<account>/<mode>/<email id>.json. */
class BodyFiles {
  /** Tenant directories made by this process (one mkdir each, not one per message). */
  private readonly made = new Set<string>();

  constructor(private readonly dir: string) {}

  /** The file of an email's body; the names come from ids, checked so that none can leave the directory. */
  private file(tenant: string, emailId: string): string {
    if (!EMAIL_ID.test(emailId)) throw new TypeError("sandbox: unexpected email id");
    return tenantFilePath(this.dir, tenant, `${emailId}.json`);
  }

  /**
   * Writes the body to its own name, creating the file (`wx`): one open and
   * one write per message, the sandbox's cost on every send. Nobody reads it
   * before its row exists, which comes after the write; a crash in the middle
   * leaves a cut file and no row, and the resend finds the file: a whole one
   * (the first keeping) stays, a cut one is replaced whole (a temporary file
   * renamed over it).
   */
  async put(tenant: string, emailId: string, body: SandboxBody): Promise<void> {
    const file = this.file(tenant, emailId);
    const dir = path.dirname(file);
    if (!this.made.has(dir)) {
      await mkdir(dir, { recursive: true });
      this.made.add(dir);
    }
    const data = JSON.stringify(body);
    try {
      await createFile(file, data, { flag: "wx", mode: 0o600 });
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") {
        // The directory went away (removed by hand): make it again.
        this.made.delete(dir);
        return this.put(tenant, emailId, body);
      }
      if (code !== "EEXIST") throw err;
    }
    if ((await this.get(tenant, emailId)) !== undefined) return;
    await writeFileWhole(file, data);
  }

  /** The body, or undefined when there is none (or only a cut one, which a resend replaces). */
  async get(tenant: string, emailId: string): Promise<SandboxBody | undefined> {
    const bytes = await readFileIfPresent(this.file(tenant, emailId));
    if (bytes === undefined) return undefined;
    try {
      return JSON.parse(bytes.toString("utf8")) as SandboxBody;
    } catch {
      return undefined;
    }
  }

  /** Deletes these emails' bodies; an id no body file could have is skipped. */
  async delete(tenant: string, emailIds: readonly string[]): Promise<void> {
    let files: string[];
    try {
      files = emailIds.filter((id) => EMAIL_ID.test(id)).map((id) => this.file(tenant, id));
    } catch {
      return; // a tenant key no body file could have
    }
    await Promise.all(files.map(removeFile));
  }

  /** Deletes bodies (and temporary files) last written before `cutoff` (ms). */
  async deleteOlderThan(cutoff: number): Promise<void> {
    for (const account of await names(this.dir)) {
      for (const mode of await names(path.join(this.dir, account))) {
        const dir = path.join(this.dir, account, mode);
        for (const name of await names(dir)) {
          if (!BODY_FILE.test(name) && !name.endsWith(".tmp")) continue;
          const file = path.join(dir, name);
          const stats = await stat(file).catch(() => undefined);
          if (stats && stats.mtimeMs < cutoff) await removeFile(file);
        }
      }
    }
  }
}

// The callback forms: every send writes one file, and every dropped message
// deletes one, so they skip what fs/promises adds (a FileHandle per open, an
// lstat before each rm).
const createFile = promisify(writeFileCallback);
const unlinkFile = promisify(unlink);

/** Deletes a file; one already gone is no error. */
async function removeFile(file: string): Promise<void> {
  try {
    await unlinkFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

async function names(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return [];
    throw err;
  }
}
