import { ExpiringCache } from "@emailsvc/async";
import { invalid } from "@emailsvc/errors";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { hasVisibleText, trimInvisible, visibleTextRule } from "@emailsvc/text";
import { DuplicateKeyError } from "@emailsvc/storage";
import { checkBrandColor, checkLogoUrl } from "../domain/branding.js";
import { frameAncestorsProblem } from "../domain/frame-ancestors.js";
import type { PortalSettingsDoc, PortalStorage } from "../storage/settings.js";

export interface PortalSettingsView {
  /** Empty: the platform's default. */
  frameAncestors: string[];
  /** How the pages name the sender ("Your subscriptions with Acme"); "": they name none. */
  senderName: string;
  /** An https URL; "": no logo. */
  logoUrl: string;
  /** "#rrggbb"; "": the platform's colour. */
  brandColor: string;
  /** Milliseconds since the epoch; undefined while never set. */
  updatedAt: number | undefined;
}

/** What an update changes; a field left out keeps its value. */
export interface PortalSettingsChange {
  frameAncestors?: readonly string[] | undefined;
  /** "" removes it. */
  senderName?: string | undefined;
  /** "" removes it. */
  logoUrl?: string | undefined;
  /** "" removes it. */
  brandColor?: string | undefined;
}

export interface SettingsDeps {
  storage: PortalStorage;
  now: () => number;
  /** Told after a tenant's settings changed (this replica's page cache forgets them at once). */
  changed?: (tenant: string) => void;
}

/** Longest sender name: a company or newsletter name, as a heading shows it. */
export const SENDER_NAME_MAX = 100;

export async function getPortalSettings(deps: SettingsDeps, call: CallContext): Promise<PortalSettingsView> {
  const tenant = tenantKey(call.tenant);
  const doc = await deps.storage.forTenant(tenant).settings.findOne({ _id: tenant });
  return view(doc);
}

function view(doc: PortalSettingsDoc | null | undefined): PortalSettingsView {
  return {
    frameAncestors: doc?.frame_ancestors ?? [],
    senderName: doc?.sender_name ?? "",
    logoUrl: doc?.logo_url ?? "",
    brandColor: doc?.brand_color ?? "",
    updatedAt: doc?.updated_at,
  };
}

/** The sender name as stored: trimmed of invisible characters; "" to remove; else 1-100 characters that show, no control characters. */
function validateSenderName(raw: string): string {
  const name = trimInvisible(raw);
  if (raw === "") return "";
  // eslint-disable-next-line no-control-regex
  if (!hasVisibleText(name) || name.length > SENDER_NAME_MAX || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalid("sender_name is invalid", [{ field: "sender_name", description: visibleTextRule(SENDER_NAME_MAX) }]);
  }
  return name;
}

/**
 * Changes the fields `change` names, each in one guarded write of the
 * tenant's document (created by the first change), so that two changes of
 * different fields at once both hold.
 */
export async function updatePortalSettings(deps: SettingsDeps, call: CallContext, change: PortalSettingsChange): Promise<PortalSettingsView> {
  const set: { frame_ancestors?: string[]; sender_name?: string; logo_url?: string; brand_color?: string } = {};
  if (change.frameAncestors !== undefined) {
    const problem = frameAncestorsProblem(change.frameAncestors);
    if (problem) throw invalid(`frame_ancestors: ${problem}`, [{ field: "frame_ancestors", description: problem }]);
    set.frame_ancestors = [...change.frameAncestors];
  }
  if (change.senderName !== undefined) set.sender_name = validateSenderName(change.senderName);
  if (change.logoUrl !== undefined) {
    const checked = change.logoUrl === "" ? { url: "" } : checkLogoUrl(change.logoUrl);
    if ("problem" in checked) throw invalid(`logo_url ${checked.problem}`, [{ field: "logo_url", description: checked.problem }]);
    set.logo_url = checked.url;
  }
  if (change.brandColor !== undefined) {
    const checked = change.brandColor === "" ? { color: "" } : checkBrandColor(change.brandColor);
    if ("problem" in checked) throw invalid(`brand_color ${checked.problem}`, [{ field: "brand_color", description: checked.problem }]);
    set.brand_color = checked.color;
  }
  const tenant = tenantKey(call.tenant);
  const settings = deps.storage.forTenant(tenant).settings;
  const now = deps.now();
  let doc = await settings.updateOne({ _id: tenant }, { $set: { ...set, updated_at: now } });
  if (!doc) {
    const fresh = { _id: tenant, frame_ancestors: [], ...set, updated_at: now };
    try {
      await settings.insertOne(fresh);
      doc = { ...fresh, tenant };
    } catch (err) {
      // Another replica created it meanwhile: change that one.
      if (!(err instanceof DuplicateKeyError)) throw err;
      doc = await settings.updateOne({ _id: tenant }, { $set: { ...set, updated_at: now } });
      if (!doc) throw err;
    }
  }
  deps.changed?.(tenant);
  return view(doc);
}

/** What a page needs of its account's settings. */
export interface PageSettings {
  /** Who may embed it: the account's setting, else the platform's. */
  frameAncestors: readonly string[];
  /** "" when the account named no sender. */
  senderName: string;
  /** "" when the account set no logo. */
  logoUrl: string;
  /** "" when the account kept the platform's colour. */
  brandColor: string;
}

/**
 * The pages' settings per tenant, read through a short cache: every page
 * view needs them. A change made through this replica applies at once, one
 * made through another within `ttlMs`.
 */
export class PageSettingsCache {
  private readonly cache: ExpiringCache<PageSettings>;

  constructor(
    private readonly deps: SettingsDeps,
    private readonly fallbackFrameAncestors: readonly string[],
    ttlMs = 30_000,
    maxEntries = 10_000,
  ) {
    this.cache = new ExpiringCache(() => ttlMs, { maxEntries, now: () => this.deps.now() });
  }

  forget(tenant: string): void {
    this.cache.forget(tenant);
  }

  async forTenant(call: CallContext): Promise<PageSettings> {
    return this.cache.get(tenantKey(call.tenant), async () => {
      const view = await getPortalSettings(this.deps, call);
      return {
        frameAncestors: view.frameAncestors.length > 0 ? view.frameAncestors : this.fallbackFrameAncestors,
        senderName: view.senderName,
        logoUrl: view.logoUrl,
        brandColor: view.brandColor,
      };
    });
  }
}
