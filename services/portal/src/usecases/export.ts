import { EXPORT_PART_KEYS, newerExportPartKeys, parseExportPart, type CampaignsExportPart, type DeliveryExportPart, type ExportParts, type SubscribersExportPart } from "@emailsvc/proto";
import type { Logger } from "@emailsvc/telemetry";
import type { ExportSources, AuditContextInit } from "../rpc/clients.js";
import { tokenSubjectGone, type PortalCall } from "./preferences.js";
import type { PreferenceBudgets } from "./budgets.js";

// The subscriber's export (GDPR Art. 15 and 20, revDSG Art. 25 and 28): one
// JSON document with every service's part, asked of each service over gRPC,
// and what the law asks the person to be told about the processing. A part
// that does not come fails the export (ExportSources): never a partial one.

/** What the person is told besides their data. The account (the sender of the mail) is the controller. */
const ABOUT_THIS_DATA = {
  controller: "The organisation that sent you email through this platform (the account holder) decides why and how your data is used; this platform processes it on their behalf.",
  purposes: [
    "Sending you the email you subscribed to or that concerns you (transactional mail such as receipts).",
    "Keeping your subscription choices and honouring an unsubscribe.",
    "Keeping a record of changes to your subscriptions (the audit trail), so that consent can be shown.",
  ],
  categories: ["email address", "subscription status", "language", "attributes the sender stored about you (metadata)", "lists you joined", "emails sent to you", "changes to your subscriptions, with the IP address and browser they came from"],
  recipients: [
    "The account holder (the sender).",
    "The email relay that delivers the sender's mail (SMTP provider), for mail sent to you.",
  ],
  retention:
    "Kept while you are subscribed or the sender keeps you as a contact. Erasure removes everything; only a keyed hash of your address is kept so that you are not imported again without a new consent.",
  source: "Given by you (a form, this page) or by the sender (their systems, an import); each entry of the audit trail says how it came.",
  automated_decisions: "None: no automated decision with legal or similarly significant effects is made about you.",
  rights: [
    "Access and a copy (this export).",
    "Rectification: ask the sender to correct your data.",
    "Erasure: delete your account on the preference page, or ask the sender.",
    "Objection and withdrawal of consent: unsubscribe on the preference page; it takes effect at once.",
    "Data portability: this export is machine-readable JSON.",
    "A complaint to a supervisory authority: in Switzerland the FDPIC (EDÖB), in the EU the authority of your country.",
  ],
} as const;

export const EXPORT_FORMAT_VERSION = 1;

export interface ExportDeps {
  sources: ExportSources;
  /** The subscriber's `privacy` budget, charged when they ask themself (source `portal`: the API or the page). */
  budgets: PreferenceBudgets;
  /** Names the keys of a part this portal does not know (never their values). */
  logger: Logger;
  now: () => number;
}

/**
 * The whole document: the parts (typed once, in @emailsvc/proto) and what the
 * person is told, and any key of a part newer than this portal (kept as the
 * service wrote it: parseExportPart says why).
 */
export type SubscriberExport = {
  export: { format_version: number; generated_at: string; subscriber_id: string };
  about_this_data: typeof ABOUT_THIS_DATA;
} & SubscribersExportPart &
  DeliveryExportPart &
  CampaignsExportPart &
  Record<string, unknown>;

/**
 * The export as JSON text. `audit` says who asked and how (`portal`: the
 * subscriber, through the API or the page, which draws from their `privacy`
 * budget; `api`: the integrator, whose API key's budgets the gateway
 * charged); the subscribers service logs the request.
 */
export async function exportData(deps: ExportDeps, portal: Pick<PortalCall, "call" | "subscriberId" | "rateLimitHeaders">, audit: AuditContextInit): Promise<string> {
  if (audit.source === "portal") await deps.budgets.charge(portal, "privacy");
  // The subscribers service first: an erased (or never known) subscriber has nothing to export.
  const own = await deps.sources.subscribers(portal.call, portal.subscriberId, audit);
  if (own === undefined) throw tokenSubjectGone();
  const [emails, campaigns] = await Promise.all([
    deps.sources.delivery(portal.call, portal.subscriberId),
    deps.sources.campaigns(portal.call, portal.subscriberId),
  ]);
  // Each part is checked for its keys: a part without them fails the export, never a document assembled from it.
  const parts: { [S in keyof ExportParts]: ExportParts[S] } = {
    subscribers: parseExportPart("subscribers", own),
    delivery: parseExportPart("delivery", emails),
    campaigns: parseExportPart("campaigns", campaigns),
  };
  // The names the document gives: its own, every part's known keys, and each newer key once.
  const taken = new Set<string>(["export", "about_this_data", ...Object.values(EXPORT_PART_KEYS).flat()]);
  for (const service of Object.keys(parts) as Array<keyof ExportParts>) {
    const newer = newerExportPartKeys(service, parts[service]);
    if (newer.length === 0) continue;
    // Kept, and said once per export: this portal is older than that service (a rolling upgrade under way, or the portal not redeployed).
    deps.logger.warn({ service, keys: newer }, "an export part has keys this portal does not know; they are exported as the service wrote them");
    for (const key of newer) {
      // Two values under one name cannot both be given: fail rather than hand out one of them.
      if (taken.has(key)) throw new Error(`the ${service} service's export part has a key ${key} the export holds already`);
      taken.add(key);
    }
  }
  const document: SubscriberExport = {
    export: {
      format_version: EXPORT_FORMAT_VERSION,
      generated_at: new Date(deps.now()).toISOString(),
      subscriber_id: portal.subscriberId,
    },
    ...parts.subscribers,
    ...parts.delivery,
    ...parts.campaigns,
    about_this_data: ABOUT_THIS_DATA,
  };
  return JSON.stringify(document, null, 2);
}
