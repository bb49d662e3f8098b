import { delivery } from "@emailsvc/proto";
import type { TenantCollection, TenantFilter, TenantUpdate } from "@emailsvc/storage";
import { SKIP_REASONS, type RecipientCounts, type RecipientState, type SkipReason } from "../domain/campaign.js";
import type { CampaignDoc, RecipientDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

// The ledger (campaign_recipients) and the counts on the campaign document
// move together: every change of rows is a guarded updateMany from one state,
// and the number it matched moves between two buckets of the counts in one
// `$inc`, so the counts add up to the total whenever they are read. A crash
// between the two writes leaves the counts behind the ledger; `reconcile`
// recounts them from the ledger when a dispatcher takes a campaign over from
// another (or from its own run that failed), when it finishes, and when the
// ledger has nothing left in flight while the counts say otherwise. A recount
// is a count of the rows then a write of the counts, so a move between the two
// (a row written, its count not yet) is lost or counted twice: it runs when no
// moves are expected, never at a plain resume.
//
// The hand-over is a position, not a state written on each row: the campaign's
// `handed_up_to` is the id of the last row the dispatcher handed to delivery,
// moved with the counts (pending -> queued) in one write per batch. A row
// stored `pending` at or before it is with delivery (the `queued` bucket),
// after it still to be handed over; `held` (delivery held it for a pause) is
// back in the pending bucket until it is handed over again. So each recipient
// costs one row write, its outcome (queued -> sent | failed | skipped). Rows
// stored `queued` by earlier versions count as queued.

/** A bucket of the counts: a state, or skipped with its reason. */
export type Bucket = Exclude<RecipientState, "skipped"> | `skipped.${SkipReason}`;

/** A bucket rows can be moved to (to queued is the hand-over's position: handOver). */
export type Target = Exclude<Bucket, "queued">;

/** The row id of a campaign's recipient. */
export function rowId(campaignId: string, subscriberId: string): string {
  return `${campaignId}:${subscriberId}`;
}

/** The bounds of a campaign's rows in id order (`:` < `;`). */
export function rowRange(campaignId: string, after = ""): { $gt: string; $lt: string } {
  return { $gt: after || `${campaignId}:`, $lt: `${campaignId};` };
}

/** Where the hand-over of a campaign stands: the last row id handed to delivery ("" before the first). */
export function positionOf(doc: Pick<CampaignDoc, "handed_up_to"> | null | undefined): string {
  return doc?.handed_up_to ?? "";
}

/** The bucket a row is in, given its campaign's hand-over position. */
export function bucketOf(row: Pick<RecipientDoc, "_id" | "state" | "reason">, position: string): Bucket {
  switch (row.state) {
    case "skipped":
      return `skipped.${row.reason as SkipReason}` as Bucket;
    case "pending":
      return position !== "" && row._id <= position ? "queued" : "pending";
    case "held":
      return "pending";
    default:
      return row.state;
  }
}

/** What a row of a bucket is stored as: its state, and the ids it may have (given, and the position). */
interface RowsOf {
  state: RecipientDoc["state"];
  reason?: string;
  /** Only rows at or before the position (`upTo`), or after it (`after`). */
  upTo?: string;
  after?: string;
}

/** The stored forms of a bucket's rows. */
function rowsOf(bucket: Bucket, position: string): RowsOf[] {
  const [state, reason] = bucket.split(".") as [RecipientState, string?];
  if (state === "pending") return [{ state: "pending", after: position }, { state: "held" }];
  if (state === "queued") return [...(position !== "" ? [{ state: "pending" as const, upTo: position }] : []), { state: "queued" }];
  return [{ state, ...(reason ? { reason } : {}) }];
}

/**
 * A filter of the rows of one stored form, among `ids` (all of the campaign's
 * when undefined); null when none can match. All of a campaign's rows of a
 * state, without bounds, are named by the campaign and state alone (every row
 * id starts with the campaign's): the embedded store then counts them from
 * its index without reading a row (a campaign's recount at its end read each
 * of its 100,000 rows for the sent bucket).
 */
function filterOf(campaignId: string, form: RowsOf, ids: readonly string[] | undefined): TenantFilter<RecipientDoc> | null {
  const within = (id: string) => (form.upTo === undefined || id <= form.upTo) && (form.after === undefined || form.after === "" || id > form.after);
  const base = { campaign_id: campaignId, state: form.state, ...(form.reason ? { reason: form.reason } : {}) };
  if (ids) {
    const some = ids.filter(within);
    return some.length === 0 ? null : ({ ...base, _id: some.length === 1 ? some[0] : { $in: some } } as TenantFilter<RecipientDoc>);
  }
  if (form.upTo === undefined && !form.after) return base as TenantFilter<RecipientDoc>;
  const range: Record<string, string> = { ...rowRange(campaignId, form.after) };
  if (form.upTo !== undefined) {
    delete range.$lt;
    range.$lte = form.upTo;
  }
  return { ...base, _id: range } as TenantFilter<RecipientDoc>;
}

/** Moves `n` recipients of a campaign from one bucket of its counts to another. */
export async function moveCounts(campaigns: TenantCollection<CampaignDoc>, campaignId: string, from: Bucket, to: Bucket, n: number): Promise<void> {
  if (n <= 0 || from === to) return;
  await campaigns.updateOne({ _id: campaignId }, { $inc: { [`counts.${from}`]: -n, [`counts.${to}`]: n } } as unknown as TenantUpdate<CampaignDoc>);
}

/**
 * Moves rows of a campaign from one bucket to another (guarded by the state
 * they leave, and for pending and queued by the hand-over position), counts
 * included; `ids` the rows (undefined: every row of the bucket). To
 * `pending` is a row delivery held (stored `held`); to `queued` is not a move
 * of rows but of the position (handOver). Resolves how many moved.
 */
export async function moveRows(
  repos: Pick<TenantRepositories, "campaigns" | "recipients">,
  campaignId: string,
  ids: readonly string[] | undefined,
  from: Bucket,
  to: Target,
  now: number,
): Promise<number> {
  if (from === to) return 0;
  const [state, reason] = to.split(".") as [RecipientState, string?];
  const position = from === "pending" || from === "queued" ? positionOf(await repos.campaigns.findOne({ _id: campaignId })) : "";
  let moved = 0;
  for (const form of rowsOf(from, position)) {
    if (ids && moved >= ids.length) break;
    const filter = filterOf(campaignId, form, ids);
    if (!filter) continue;
    // A reason only where one is given, or cleared where the row had one (a late sent after a cancel):
    // rows without one never get the field (an outcome adding a field costs the embedded store more).
    const why = reason ? { reason } : from.startsWith("skipped.") ? { reason: "" } : {};
    const set = state === "pending" ? { state: "held" as const, updated_at: now } : { state, ...why, updated_at: now };
    moved += await repos.recipients.updateMany(filter, { $set: set });
  }
  await moveCounts(repos.campaigns, campaignId, from, to, moved);
  return moved;
}

/**
 * Hands `n` rows over to delivery: the campaign's position moves to `upTo`
 * (the last of them, every pending row up to it being handed over) and `n`
 * from pending to queued, in one write guarded by `guard` (the dispatcher's
 * lease and the status). Null when the guard no longer holds: nothing was
 * handed over.
 */
export async function handOver(
  campaigns: TenantCollection<CampaignDoc>,
  campaignId: string,
  upTo: string,
  n: number,
  guard: TenantFilter<CampaignDoc> = {},
): Promise<CampaignDoc | null> {
  return campaigns.updateOne({ ...guard, _id: campaignId }, {
    $set: { handed_up_to: upTo },
    $inc: { "counts.pending": -n, "counts.queued": n },
  } as unknown as TenantUpdate<CampaignDoc>);
}

/**
 * Hands over again rows delivery held (they lie at or before the position:
 * stored `pending` again they are with delivery): held -> queued, counts
 * included. Resolves how many moved.
 */
export async function handOverHeld(repos: Pick<TenantRepositories, "campaigns" | "recipients">, campaignId: string, ids: readonly string[], now: number): Promise<number> {
  if (ids.length === 0) return 0;
  const moved = await repos.recipients.updateMany({ campaign_id: campaignId, state: "held", _id: { $in: [...ids] } } as TenantFilter<RecipientDoc>, {
    $set: { state: "pending", updated_at: now },
  });
  await moveCounts(repos.campaigns, campaignId, "pending", "queued", moved);
  return moved;
}

/** The filters of a campaign's rows with delivery (the queued bucket) within (`after`, `upTo`]. */
export function inFlight(campaignId: string, position: string, after = "", upTo = position): Array<TenantFilter<RecipientDoc>> {
  const bound = upTo < position ? upTo : position;
  return [
    ...(bound !== "" ? [{ campaign_id: campaignId, state: "pending", _id: { $gt: after || `${campaignId}:`, $lte: bound } } as TenantFilter<RecipientDoc>] : []),
    // Rows stored queued by earlier versions, wherever they lie (all of them up to the position itself).
    { campaign_id: campaignId, state: "queued", _id: { $gt: after || `${campaignId}:`, ...(upTo !== "" && upTo < position ? { $lte: upTo } : { $lt: `${campaignId};` }) } } as TenantFilter<RecipientDoc>,
  ];
}

/** The rows of a campaign by bucket, as the ledger holds them (`position`: the hand-over's). */
async function countRows(recipients: TenantCollection<RecipientDoc>, campaignId: string, position: string): Promise<RecipientCounts> {
  const count = async (bucket: Bucket) => {
    let n = 0;
    for (const form of rowsOf(bucket, position)) n += await recipients.count(filterOf(campaignId, form, undefined)!);
    return n;
  };
  const [pending, queued, sent, failed, ...skipped] = await Promise.all([
    count("pending"),
    count("queued"),
    count("sent"),
    count("failed"),
    ...SKIP_REASONS.map((reason) => count(`skipped.${reason}`)),
  ]);
  const bySkip = Object.fromEntries(SKIP_REASONS.map((reason, i) => [reason, skipped[i] ?? 0])) as Record<SkipReason, number>;
  return { total: 0, pending: pending!, queued: queued!, sent: sent!, failed: failed!, skipped: bySkip };
}

/** Adds `n` recipients of `bucket` to counts (total apart). */
function addTo(counts: RecipientCounts, bucket: Bucket, n: number): void {
  const [state, reason] = bucket.split(".") as [RecipientState, SkipReason?];
  if (state === "skipped") counts.skipped[reason!] += n;
  else counts[state] += n;
}

/**
 * The counts of a campaign recounted from its ledger (one count per bucket),
 * with the rows erasures removed (`erased_rows`; rows counted there and not
 * yet removed are taken once). Read again when an erasure moved meanwhile.
 */
export async function countLedger(repos: Pick<TenantRepositories, "campaigns" | "recipients">, campaignId: string): Promise<RecipientCounts> {
  for (let attempt = 0; ; attempt++) {
    const before = await repos.campaigns.findOne({ _id: campaignId });
    const counts = await countRows(repos.recipients, campaignId, positionOf(before));
    const after = await repos.campaigns.findOne({ _id: campaignId });
    const erasures = (doc: CampaignDoc | null) => JSON.stringify([doc?.erased_rows ?? {}, doc?.erasing ?? []]);
    if ((erasures(before) !== erasures(after) || positionOf(before) !== positionOf(after)) && attempt < 5) continue;
    const erased = after?.erased_rows ?? {};
    counts.sent += erased.sent ?? 0;
    counts.failed += erased.failed ?? 0;
    for (const reason of SKIP_REASONS) counts.skipped[reason] += erased.skipped?.[reason] ?? 0;
    const erasing = after?.erasing ?? [];
    if (erasing.length > 0) {
      for (const row of await repos.recipients.find({ campaign_id: campaignId, email_id: { $in: erasing } })) addTo(counts, bucketOf(row, positionOf(after)), -1);
    }
    counts.total = counts.pending + counts.queued + counts.sent + counts.failed + SKIP_REASONS.reduce((sum, r) => sum + counts.skipped[r], 0);
    return counts;
  }
}

/** Sets a campaign's counts to what its ledger says. */
export async function reconcile(repos: Pick<TenantRepositories, "campaigns" | "recipients">, campaignId: string): Promise<RecipientCounts> {
  const counts = await countLedger(repos, campaignId);
  await repos.campaigns.updateOne({ _id: campaignId }, { $set: { counts } });
  return counts;
}

/**
 * Skips a row still open (pending, held or with delivery) as `to`, whatever
 * bucket it is in when the write comes (the hand-over may move it from
 * pending to queued meanwhile). Resolves the row as it is then (null: gone).
 */
export async function skipOpenRow(
  repos: Pick<TenantRepositories, "campaigns" | "recipients">,
  found: RecipientDoc,
  to: `skipped.${SkipReason}`,
  now: number,
): Promise<RecipientDoc | null> {
  let row: RecipientDoc | null = found;
  while (row && (row.state === "pending" || row.state === "held" || row.state === "queued")) {
    const position = positionOf(await repos.campaigns.findOne({ _id: row.campaign_id }));
    await moveRows(repos, row.campaign_id, [row._id], bucketOf(row, position), to, now);
    row = await repos.recipients.findOne({ _id: found._id });
  }
  return row;
}

/**
 * Removes rows from the ledger, keeping their campaigns' counts: a row still
 * open (pending, held or with delivery) is first skipped as `erased` (a row
 * in flight would otherwise be counted as queued for ever); then, per row,
 * its bucket is counted in the campaign's `erased_rows` with its email id in
 * `erasing` (one write, guarded by that id not being there yet), the row
 * deleted, and the id pulled. A crash anywhere in between is finished by the
 * next pass, and a recount (countLedger) takes a row counted and not yet
 * deleted once.
 */
export async function eraseRows(repos: Pick<TenantRepositories, "campaigns" | "recipients">, rows: readonly RecipientDoc[], now: number): Promise<number> {
  let erased = 0;
  for (const found of rows) {
    const row = await skipOpenRow(repos, found, "skipped.erased", now);
    if (!row) continue;
    await repos.campaigns.updateOne(
      { _id: row.campaign_id, erasing: { $ne: row.email_id } },
      { $inc: { [`erased_rows.${bucketOf(row, "")}`]: 1 }, $addToSet: { erasing: { $each: [row.email_id] } } } as unknown as TenantUpdate<CampaignDoc>,
    );
    if (await repos.recipients.deleteOne({ _id: row._id })) erased++;
    await repos.campaigns.updateOne({ _id: row.campaign_id }, { $pull: { erasing: row.email_id } });
  }
  return erased;
}
