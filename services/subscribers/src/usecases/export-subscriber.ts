import type { SubscribersExportPart } from "@emailsvc/proto";
import { AppError, notFound } from "@emailsvc/errors";
import type { AuditDoc, SubscriberDoc } from "../storage/documents.js";
import type { Scope, Deps } from "./deps.js";
import { logPrivacyRequest } from "./privacy-requests.js";

// The subscribers service's part of a data export (GDPR Art. 15 and 20,
// revDSG Art. 25): the profile, the tags with when and how they were joined,
// the whole audit trail, and the consent records read from it. The other
// services export their own parts; an assembler puts them together.

/** Audit records read per query. */
const PAGE = 500;
/** Most audit records one export takes; beyond, RESOURCE_EXHAUSTED (`export_too_large`). */
export const EXPORT_MAX_AUDIT_RECORDS = 20_000;
/** Largest part, as JSON text (a gRPC message stays well under common 16 MiB limits). */
export const EXPORT_MAX_BYTES = 8 * 1024 * 1024;

const time = (ms: number) => new Date(ms).toISOString();

/** The part as JSON text; NOT_FOUND for an unknown or erased subscriber. The request is logged either way. */
export async function exportSubscriberData(deps: Deps, scope: Scope, subscriberId: string): Promise<string> {
  const doc = await scope.subscribers.findOne({ _id: subscriberId, deleted: false });
  if (!doc) {
    await logPrivacyRequest(deps, scope, "export", "not_found", true);
    throw notFound("subscriber");
  }
  let json: string;
  try {
    const trail = await readTrail(scope, subscriberId);
    json = JSON.stringify(await part(scope, doc, trail));
    if (Buffer.byteLength(json) > EXPORT_MAX_BYTES) throw tooLarge(`the export is larger than ${EXPORT_MAX_BYTES} bytes`);
  } catch (err) {
    if (err instanceof AppError && err.code === "export_too_large") await logPrivacyRequest(deps, scope, "export", "too_large", true);
    throw err;
  }
  await logPrivacyRequest(deps, scope, "export", "exported", true);
  return json;
}

function tooLarge(message: string): AppError {
  return new AppError("too_large", "export_too_large", `${message}; ask the operator for an export`);
}

/** The whole trail, oldest first, in pages on the trail's index. */
async function readTrail(scope: Scope, subscriberId: string): Promise<AuditDoc[]> {
  const trail: AuditDoc[] = [];
  let after = "";
  for (;;) {
    const page = await scope.audit.find(
      { subscriber_id: subscriberId, ...(after ? { _id: { $gt: after } } : {}) },
      { sort: { _id: 1 }, limit: PAGE },
    );
    trail.push(...page);
    if (trail.length > EXPORT_MAX_AUDIT_RECORDS) throw tooLarge(`the audit trail holds more than ${EXPORT_MAX_AUDIT_RECORDS} records`);
    if (page.length < PAGE) return trail;
    after = page[page.length - 1]!._id;
  }
}

interface Joined {
  at: number;
  via: string;
}

async function part(scope: Scope, doc: SubscriberDoc, trail: AuditDoc[]): Promise<SubscribersExportPart> {
  const tags = doc.tag_ids.length > 0 ? await scope.tags.find({ _id: { $in: doc.tag_ids } }) : [];
  const joined = joinsOf(trail, new Map(tags.map((t) => [t.name.toLowerCase(), t._id])));
  return {
    profile: {
      id: doc._id,
      email: doc.email,
      status: doc.status,
      locale: doc.locale || null,
      metadata: doc.metadata,
      created_at: time(doc.created_at),
      updated_at: time(doc.updated_at),
    },
    tags: tags
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((t) => {
        const j = joined.get(t._id);
        return { id: t._id, name: t.name, joined_at: j ? time(j.at) : null, joined_via: j?.via || null };
      }),
    audit_trail: trail.map((e) => ({
      id: e._id,
      type: e.type,
      occurred_at: time(e.occurred_at),
      actor: e.actor,
      source: e.source || null,
      ip: e.ip || null,
      user_agent: e.user_agent || null,
      data: e.data,
    })),
    consent: consentOf(trail),
  };
}

/**
 * When and how each tag the subscriber holds was (last) joined, replayed from
 * the trail: created with tags, tag added, tag removed. Older creations name
 * tags only by name; those are matched by name.
 */
function joinsOf(trail: AuditDoc[], idsByName: Map<string, string>): Map<string, Joined> {
  const joined = new Map<string, Joined>();
  for (const e of trail) {
    const data = e.data as { tag_id?: unknown; tag_ids?: unknown; tags?: unknown };
    const via = e.source ?? "";
    if (e.type === "subscriber.created") {
      const ids = Array.isArray(data.tag_ids)
        ? data.tag_ids.filter((id): id is string => typeof id === "string")
        : (Array.isArray(data.tags) ? data.tags : []).flatMap((name) => idsByName.get(String(name).toLowerCase()) ?? []);
      for (const id of ids) joined.set(id, { at: e.occurred_at, via });
    } else if (e.type === "subscriber.tag_added" && typeof data.tag_id === "string") {
      joined.set(data.tag_id, { at: e.occurred_at, via });
    } else if (e.type === "subscriber.tag_removed" && typeof data.tag_id === "string") {
      joined.delete(data.tag_id);
    }
  }
  return joined;
}

/**
 * The consent records the trail holds: opting in (a subscriber created
 * active, a status back to active; with the wording the person saw when
 * the request carried it), signing up with double opt-in
 * (`opt_in_requested`, a subscriber created pending) and confirming it
 * (`confirmed`, the click's time, IP and user agent), opting in again after an erasure
 * (`resubscribe`, with its reason), opting out (created or changed to
 * unsubscribed, or unsubscribing while bounced or complained:
 * `subscriber.opted_out`), and joining or leaving a tag (scope `tag`).
 * Bounces, complaints, tags deleted by the integrator and the status that
 * follows an opt-out once a bounce is lifted (reason `opted_out`) are no
 * new consent and not listed.
 */
function consentOf(trail: AuditDoc[]): SubscribersExportPart["consent"] {
  const records: SubscribersExportPart["consent"] = [];
  for (const e of trail) {
    const data = e.data as { status?: unknown; to?: unknown; tag?: unknown; resubscribe?: unknown; resubscribe_reason?: unknown; reason?: unknown; consent?: unknown };
    const record = (action: Action, scope: "all" | "tag", tag: string | null = null, reason: string | null = null) =>
      records.push({
        event_id: e._id,
        action,
        scope,
        tag,
        at: time(e.occurred_at),
        actor: e.actor,
        source: e.source || null,
        ip: e.ip || null,
        user_agent: e.user_agent || null,
        reason,
        wording: wordingOf(data.consent),
      });
    switch (e.type) {
      case "subscriber.created":
        if (data.resubscribe === true) record("resubscribe", "all", null, typeof data.resubscribe_reason === "string" ? data.resubscribe_reason : null);
        else if (data.status === "active") record("opt_in", "all");
        else if (data.status === "pending") record("opt_in_requested", "all");
        else if (data.status === "unsubscribed") record("opt_out", "all");
        break;
      case "subscriber.status_changed":
        if (data.reason === "opted_out") break;
        if (data.reason === "confirmed") record("confirmed", "all");
        else if (data.to === "active") record("opt_in", "all");
        else if (data.to === "unsubscribed") record("opt_out", "all");
        break;
      case "subscriber.opted_out":
        record("opt_out", "all");
        break;
      case "subscriber.tag_added":
        record("opt_in", "tag", typeof data.tag === "string" ? data.tag : null);
        break;
      case "subscriber.tag_removed":
        // A tag deleted by the integrator is no choice of the subscriber's.
        if ((e.data as { reason?: unknown }).reason !== "tag_deleted") record("opt_out", "tag", typeof data.tag === "string" ? data.tag : null);
        break;
    }
  }
  return records;
}

type Action = SubscribersExportPart["consent"][number]["action"];

/** The wording an opt-in's audit record carries (domain/double-opt-in.ts, consentData). */
function wordingOf(raw: unknown): SubscribersExportPart["consent"][number]["wording"] {
  if (raw === null || typeof raw !== "object") return null;
  const w = raw as { text?: unknown; version?: unknown; source_id?: unknown };
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  return { text: str(w.text), version: str(w.version), source_id: str(w.source_id) };
}
