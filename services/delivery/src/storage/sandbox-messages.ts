import { stat } from "node:fs/promises";
import * as path from "node:path";
import { DuplicateKeyError, readFileIfPresent, tenantFilePath, type CrossTenantCollection, type IndexSpec, type TenantCollection } from "@emailsvc/storage";
import { SANDBOX_INDEXES, SANDBOX_SEGMENT_INDEXES, type SandboxBody, type SandboxMessageDoc } from "./documents.js";
import { BodySegments, names, removeFile, type BodyLocation, type SegmentSettings } from "./sandbox-segments.js";

// What the sandbox provider keeps, and for how long (issue 16, defect 2: one
// test-key campaign to 50,000 took the process from 1.2 to 2.3 GB, for ever,
// because every rendered message was a document of the embedded store, which
// holds every document in memory).
//
//  - Bounded in time: a message is readable for `retentionMs`
//    (SANDBOX_RETENTION_HOURS, 72 h); a sweep deletes older ones.
//  - Bounded per tenant: at most `maxPerTenant` (SANDBOX_MAX_MESSAGES_PER_TENANT,
//    10,000) per account and mode; past it those kept longest ago go first, a
//    tenth at a time (a delete per batch of 500, not per message). On the
//    embedded store they are found by the segment their body is in, which
//    is the order they were kept in; on MongoDB by the index on time.
//  - Bodies off the heap: on the embedded store the row holds sender,
//    recipient, subject, time and where the body is; HTML, text and headers
//    are appended to a segment file of the tenant,
//    DATA_DIR/sandbox/<account>/<mode>/<n>.bodies (sandbox-segments.ts),
//    before the row is written (so a row never points at bytes not there;
//    a resend after a crash appends again, and the first bytes are
//    reclaimed with their segment). On MongoDB (no `bodiesDir`) the body
//    stays in the row: the database holds it, not this process.
//  - Erasure (erase-subscriber.ts) zeroes an email's body in its segment,
//    then deletes its row: a crash in between leaves a row whose body reads
//    as zeros (answered as expired), never a body nobody can find. A body a
//    crash left without its row is reached by no row, so no erasure finds
//    it: it stays until its segment goes (within the retention and a
//    segment's age), as a body file a crash left did before.

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
  /** When body segments rotate (tests; defaults in sandbox-segments.ts). */
  segments?: Omit<SegmentSettings, "now">;
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
  /** Erases the kept messages of these emails: bodies overwritten first, then rows. */
  deleteForEmails(emailIds: readonly string[]): Promise<void>;
}

/** Every tenant's kept messages: the sandbox provider's store, with its retention sweep and per-tenant cap. */
export class SandboxArchive {
  readonly retentionMs: number;
  readonly maxPerTenant: number;
  /** The indexes its rows need (made at start): with bodies in segments, also the one by segment. */
  readonly indexes: readonly IndexSpec[];
  private readonly bodies: BodySegments | undefined;
  private readonly bodiesDir: string | undefined;
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
    this.now = settings.now ?? Date.now;
    this.bodiesDir = settings.bodiesDir;
    this.bodies = settings.bodiesDir !== undefined ? new BodySegments(settings.bodiesDir, { ...settings.segments, now: this.now }) : undefined;
    this.indexes = this.bodies ? [...SANDBOX_INDEXES, ...SANDBOX_SEGMENT_INDEXES] : SANDBOX_INDEXES;
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
    await this.bodies?.close();
  }

  /**
   * Keeps one email's message in its tenant; a message already kept for it
   * (a resend after a crash) stays as it was. Answers whether this call kept it.
   */
  async keep(tenant: string, message: SandboxMessage): Promise<boolean> {
    const { html, text, headers } = message;
    // The body first: a row is never without the body it was kept with.
    const location = await this.bodies?.append(tenant, message.emailId, { html, text, headers });
    const row: Omit<SandboxMessageDoc, "tenant"> = {
      _id: message.emailId,
      from: message.from,
      to: message.to,
      subject: message.subject,
      captured_at: message.capturedAt,
      ...(location ? { body_segment: location.segment, body_offset: location.offset, body_length: location.length } : { body: { html, text, headers } }),
    };
    try {
      await this.rows.forTenant(tenant).insertOne(row);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // Kept before (a resend): nothing will reach the bytes just appended, so no erasure would find them; zeroed now.
      if (location) await this.bodies!.erase(tenant, [location]);
      return false;
    } finally {
      if (location) this.bodies!.settled(tenant, location);
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
        const location = locationOf(row);
        const body = row.body ?? legacyBody(row) ?? (location ? await this.bodies?.read(tenant, emailId, location) : await this.legacyFile(tenant, emailId));
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
      deleteForEmails: async (emailIds) => {
        for (let i = 0; i < emailIds.length; i += BATCH) {
          await this.remove(rows, await rows.find({ _id: { $in: emailIds.slice(i, i + BATCH) } }), "erase");
        }
        await this.reclaim(rows);
      },
    };
  }

  /**
   * Deletes these rows, and what of their bodies is a file of its own (from
   * before segments). Erased, their bodies' bytes are zeroed first; dropped
   * by the cap or the retention, they stay until their segment is reclaimed.
   */
  private async remove(rows: TenantCollection<SandboxMessageDoc>, docs: readonly SandboxMessageDoc[], how: "erase" | "drop"): Promise<void> {
    if (docs.length === 0) return;
    if (this.bodies) {
      const located = docs.map(locationOf).filter((location) => location !== undefined);
      if (how === "erase") await this.bodies.erase(rows.tenant, located);
      if (located.length < docs.length) await this.deleteLegacyFiles(rows.tenant, docs.filter((doc) => locationOf(doc) === undefined).map((doc) => doc._id));
    }
    const deleted = await rows.deleteMany({ _id: { $in: docs.map((doc) => doc._id) } });
    const known = this.counted.get(rows.tenant);
    if (known !== undefined) this.counted.set(rows.tenant, Math.max(0, known - deleted));
  }

  /** Deletes the tenant's segments none of its rows points into any more. */
  private async reclaim(rows: TenantCollection<SandboxMessageDoc>): Promise<void> {
    const bodies = this.bodies;
    if (!bodies) return;
    await bodies.reclaim(rows.tenant, async () => {
      const used = new Set<string>();
      for (const [segment, size] of await this.segmentSizes(bodies, rows)) if (size > 0) used.add(segment);
      return used;
    });
  }

  /**
   * How many rows point into each of the tenant's segments, oldest segment
   * first: counted from the index by segment (`indexes`), no
   * row read.
   */
  private async segmentSizes(bodies: BodySegments, rows: TenantCollection<SandboxMessageDoc>): Promise<Array<[string, number]>> {
    const sizes: Array<[string, number]> = [];
    for (const segment of await bodies.segmentsOf(rows.tenant)) sizes.push([segment, await rows.count({ body_segment: segment })]);
    return sizes;
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
   * Deletes the tenant's messages kept longest ago (not those of the oldest
   * email ids: a campaign's email ids are minted when its audience is
   * copied, so a campaign resumed after a long pause sends old ids last, and
   * they would go first) down to a tenth below the cap, until a count finds
   * it within the cap (messages kept meanwhile are counted too).
   */
  private async trim(tenant: string): Promise<void> {
    const rows = this.rows.forTenant(tenant);
    const target = this.maxPerTenant - Math.floor(this.maxPerTenant / 10);
    for (let count = await rows.count({}); count > this.maxPerTenant; count = await rows.count({})) {
      const dropped = (await this.dropFirstKeptBySegment(rows, count, count - target)) ?? (await this.dropFirstKeptByTime(rows, count - target));
      if (dropped === 0) break;
    }
    this.counted.set(tenant, await rows.count({}));
    await this.reclaim(rows);
  }

  /**
   * The `n` kept first, by `captured_at`: one sorted read (the index by
   * tenant and time on MongoDB; on the embedded store every row of the
   * tenant, read and sorted in memory), then deletes in batches.
   */
  private async dropFirstKeptByTime(rows: TenantCollection<SandboxMessageDoc>, n: number): Promise<number> {
    return this.dropAll(rows, await rows.find({}, { sort: { captured_at: 1, _id: 1 }, limit: n }));
  }

  /**
   * The `n` kept first, when every row's body is in a segment (the embedded
   * store): bodies are appended in the order they are kept, segment after
   * segment, so the first kept are the first rows of the oldest segments.
   * Only those rows are read, found by the index by segment; sorting every
   * row of the tenant by time at each trim (every 1,000 messages past a cap
   * of 10,000) made a 100,000-message sandbox campaign 16.8 s instead of
   * 15.6 (issue 20, means of six pairs; bench:sandbox-archive measures the
   * trims alone). Undefined when some row has no segment (a body kept in its
   * row or a file of its own, before segments; or a row erased meanwhile):
   * then by time.
   */
  private async dropFirstKeptBySegment(rows: TenantCollection<SandboxMessageDoc>, total: number, n: number): Promise<number | undefined> {
    const bodies = this.bodies;
    if (!bodies) return undefined;
    const sizes = await this.segmentSizes(bodies, rows);
    // Counted after `total`: rows kept meanwhile only add to it.
    if (sizes.reduce((sum, [, size]) => sum + size, 0) < total) return undefined;
    let dropped = 0;
    for (const [segment, size] of sizes) {
      if (dropped >= n) break;
      if (size === 0) continue;
      dropped += await this.dropAll(rows, await rows.find({ body_segment: segment }, { sort: { body_offset: 1 }, limit: n - dropped }));
    }
    return dropped;
  }

  /** Drops these rows (the cap's), a batch at a time; answers how many were given. */
  private async dropAll(rows: TenantCollection<SandboxMessageDoc>, docs: readonly SandboxMessageDoc[]): Promise<number> {
    for (let i = 0; i < docs.length; i += BATCH) await this.remove(rows, docs.slice(i, i + BATCH), "drop");
    return docs.length;
  }

  /** Deletes every message older than the retention (each tenant's by itself), and body segments no row points into; answers how many rows went. */
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
      const byTenant = new Map<string, SandboxMessageDoc[]>();
      for (const row of expired) byTenant.set(row.tenant, [...(byTenant.get(row.tenant) ?? []), row]);
      for (const [tenant, rows] of byTenant) await this.remove(this.rows.forTenant(tenant), rows, "drop");
      deleted += expired.length;
      if (expired.length < BATCH) break;
    }
    if (this.bodies && this.bodiesDir !== undefined) {
      // Every tenant with segments, also those this process never wrote for (kept before a restart).
      for (const tenant of await this.bodies.tenantsOnDisk()) {
        if (!TENANT_KEY.test(tenant)) continue;
        await this.reclaim(this.rows.forTenant(tenant));
      }
      // Bodies kept as a file each (before segments) whose row never came are found by their age alone.
      await deleteLegacyFilesOlderThan(this.bodiesDir, cutoff);
    }
    return deleted;
  }

  /** A body kept as a file of its own, before segments: <dir>/<account>/<mode>/<email id>.json. */
  private async legacyFile(tenant: string, emailId: string): Promise<SandboxBody | undefined> {
    if (this.bodiesDir === undefined || !EMAIL_ID.test(emailId)) return undefined;
    const bytes = await readFileIfPresent(tenantFilePath(this.bodiesDir, tenant, `${emailId}.json`));
    if (bytes === undefined) return undefined;
    try {
      return JSON.parse(bytes.toString("utf8")) as SandboxBody;
    } catch {
      return undefined;
    }
  }

  private async deleteLegacyFiles(tenant: string, emailIds: readonly string[]): Promise<void> {
    const dir = this.bodiesDir;
    if (dir === undefined) return;
    await Promise.all(emailIds.filter((id) => EMAIL_ID.test(id)).map((id) => removeFile(tenantFilePath(dir, tenant, `${id}.json`))));
  }
}

/** Where a row's body is in its tenant's segments; undefined for a body in the row or a file of its own. */
function locationOf(row: SandboxMessageDoc): BodyLocation | undefined {
  return row.body_segment !== undefined && row.body_offset !== undefined && row.body_length !== undefined
    ? { segment: row.body_segment, offset: row.body_offset, length: row.body_length }
    : undefined;
}

/** A row kept before bodies moved out of it held them at its top level. */
function legacyBody(row: SandboxMessageDoc): SandboxBody | undefined {
  const old = row as SandboxMessageDoc & Partial<SandboxBody>;
  return typeof old.html === "string" ? { html: old.html, text: old.text ?? "", headers: old.headers ?? {} } : undefined;
}

const EMAIL_ID = /^eml_[A-Za-z0-9]+$/;
const LEGACY_FILE = /^eml_[A-Za-z0-9]+\.json$/;
const TENANT_KEY = /^acc_[A-Za-z0-9]+:(live|test)$/;

/** Deletes bodies kept as a file each (and their temporary files) last written before `cutoff` (ms). */
async function deleteLegacyFilesOlderThan(dir: string, cutoff: number): Promise<void> {
  for (const account of await names(dir)) {
    for (const mode of await names(path.join(dir, account))) {
      const tenantDir = path.join(dir, account, mode);
      for (const name of await names(tenantDir)) {
        if (!LEGACY_FILE.test(name) && !name.endsWith(".tmp")) continue;
        const file = path.join(tenantDir, name);
        const stats = await stat(file).catch(() => undefined);
        if (stats && stats.mtimeMs < cutoff) await removeFile(file);
      }
    }
  }
}
