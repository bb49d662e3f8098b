// A subscriber's data export (GDPR Art. 15 and 20, revDSG Art. 25) is put
// together by the portal from each service's part: the answer of its
// ExportSubscriberData, a JSON object as text. These are the parts' types, so
// that each service writes its part, and the portal reads it, against one
// definition (snake_case keys, RFC 3339 UTC timestamps, null for "none").

/** The subscribers service's part. */
export interface SubscribersExportPart {
  profile: {
    id: string;
    email: string;
    status: string;
    locale: string | null;
    metadata: Record<string, string | number | boolean>;
    created_at: string;
    updated_at: string;
  };
  /** The tags held, private ones too, with when and how each was (last) joined. */
  tags: Array<{ id: string; name: string; joined_at: string | null; joined_via: string | null }>;
  audit_trail: Array<{
    id: string;
    type: string;
    occurred_at: string;
    actor: string;
    source: string | null;
    ip: string | null;
    user_agent: string | null;
    data: Record<string, unknown>;
  }>;
  consent: Array<{
    event_id: string;
    /**
     * `opt_in_requested`: signed up with double opt-in, not confirmed by that
     * record; `confirmed`: the click on the confirmation link (its time, IP
     * and user agent).
     */
    action: "opt_in" | "opt_in_requested" | "confirmed" | "opt_out" | "resubscribe";
    scope: "all" | "tag";
    tag: string | null;
    at: string;
    actor: string;
    source: string | null;
    ip: string | null;
    user_agent: string | null;
    reason: string | null;
    /** The wording the person saw (ConsentWording), on an opt-in that carried it; null otherwise. */
    wording: { text: string | null; version: string | null; source_id: string | null } | null;
  }>;
}

/** Delivery's part: the emails linked to the subscriber, oldest first. */
export interface DeliveryExportPart {
  emails: Array<{
    id: string;
    template_id: string;
    template_version: number;
    /** As rendered; null when not known. */
    subject: string | null;
    status: string;
    created_at: string | null;
    sent_at: string | null;
    campaign_id: string | null;
  }>;
}

/** The campaigns service's part: ledger rows and the trigger fires recorded for the subscriber, oldest first. */
export interface CampaignsExportPart {
  campaign_memberships: Array<{
    campaign_id: string;
    campaign_name: string | null;
    state: "pending" | "queued" | "sent" | "failed" | "skipped";
    reason: string | null;
    updated_at: string;
  }>;
  /**
   * Every fire of a trigger for the subscriber: `sent`, `skipped` or `failed`
   * with its `reason` (e.g. `created_not_active`, `unsubscribed_all`, `recipient_unsubscribed`),
   * or still `pending` (a delay); `fired_at` is its last change.
   */
  trigger_sends: Array<{
    trigger_id: string;
    event_type: string | null;
    state: "pending" | "sent" | "skipped" | "failed";
    reason: string | null;
    fired_at: string;
  }>;
}

/** Every part by the service that answers it. */
export interface ExportParts {
  subscribers: SubscribersExportPart;
  delivery: DeliveryExportPart;
  campaigns: CampaignsExportPart;
}

/** The top-level keys of each part: what the assembler checks a part it receives for. */
export const EXPORT_PART_KEYS: { readonly [S in keyof ExportParts]: ReadonlyArray<keyof ExportParts[S]> } = {
  subscribers: ["profile", "tags", "audit_trail", "consent"],
  delivery: ["emails"],
  campaigns: ["campaign_memberships", "trigger_sends"],
};

/**
 * A service's part as JSON text, read back: a JSON object with at least its
 * keys (the lists as arrays, the profile an object). A part without one of
 * them is an error naming the service, never a document put together from
 * it. Keys beyond these are kept in the value returned (newerExportPartKeys
 * names them): during a rolling upgrade a service may answer a key this
 * reader does not know yet, and that key holds the subscriber's data too.
 * The right of access (GDPR Art. 15(1) and (3), revDSG Art. 25) is to all
 * the personal data processed: dropping the key would hand out a copy that
 * claims to be whole and is not, and refusing the part would refuse the
 * whole export until every reader is redeployed. Passing it on as the
 * service wrote it (ids, values, no interpretation) is complete and safe.
 */
export function parseExportPart<S extends keyof ExportParts>(service: S, json: string): ExportParts[S] {
  const value: unknown = JSON.parse(json);
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error(`the ${service} service's export part is no JSON object`);
  const keys = EXPORT_PART_KEYS[service] as readonly string[];
  const missing = keys.filter((k) => !Object.hasOwn(value, k));
  if (missing.length > 0) throw new Error(`the ${service} service's export part does not have the keys ${keys.join(", ")} (${missing.join(", ")} missing)`);
  for (const key of keys) {
    const field = (value as Record<string, unknown>)[key];
    const isObject = key === "profile";
    if (isObject ? field === null || typeof field !== "object" || Array.isArray(field) : !Array.isArray(field)) {
      throw new Error(`the ${service} service's export part has a ${key} that is no ${isObject ? "object" : "list"}`);
    }
  }
  return value as ExportParts[S];
}

/** The keys of a part read by parseExportPart that its type does not list (a service newer than its reader). */
export function newerExportPartKeys<S extends keyof ExportParts>(service: S, part: ExportParts[S]): string[] {
  const keys = EXPORT_PART_KEYS[service] as readonly string[];
  return Object.keys(part).filter((k) => !keys.includes(k));
}
