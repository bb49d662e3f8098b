import { invalid, tenantKey, type CallContext } from "@emailsvc/runtime";
import { frameAncestorsProblem } from "../domain/frame-ancestors.js";
import type { PortalStorage } from "../storage/settings.js";

export interface PortalSettingsView {
  /** Empty: the platform's default. */
  frameAncestors: string[];
  /** Milliseconds since the epoch; undefined while never set. */
  updatedAt: number | undefined;
}

export interface SettingsDeps {
  storage: PortalStorage;
  now: () => number;
  /** Told after a tenant's settings changed (this replica's page cache forgets them at once). */
  changed?: (tenant: string) => void;
}

export async function getPortalSettings(deps: SettingsDeps, call: CallContext): Promise<PortalSettingsView> {
  const tenant = tenantKey(call.tenant);
  const doc = await deps.storage.forTenant(tenant).settings.findOne({ _id: tenant });
  return { frameAncestors: doc?.frame_ancestors ?? [], updatedAt: doc?.updated_at };
}

export async function updatePortalSettings(deps: SettingsDeps, call: CallContext, frameAncestors: readonly string[]): Promise<PortalSettingsView> {
  const problem = frameAncestorsProblem(frameAncestors);
  if (problem) throw invalid(`frame_ancestors: ${problem}`, [{ field: "frame_ancestors", description: problem }]);
  const tenant = tenantKey(call.tenant);
  const now = deps.now();
  await deps.storage.forTenant(tenant).settings.upsertMany([{ _id: tenant, frame_ancestors: [...frameAncestors], updated_at: now }]);
  deps.changed?.(tenant);
  return { frameAncestors: [...frameAncestors], updatedAt: now };
}

/**
 * The page's frame-ancestors per tenant, read through a short cache: every
 * page view needs it. A change made through this replica applies at once,
 * one made through another within `ttlMs`.
 */
export class FrameAncestorsCache {
  private readonly entries = new Map<string, { sources: string[]; until: number }>();

  constructor(
    private readonly deps: SettingsDeps,
    private readonly fallback: readonly string[],
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  forget(tenant: string): void {
    this.entries.delete(tenant);
  }

  async forTenant(call: CallContext): Promise<readonly string[]> {
    const key = tenantKey(call.tenant);
    const now = this.deps.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return hit.sources.length > 0 ? hit.sources : this.fallback;
    const { frameAncestors } = await getPortalSettings(this.deps, call);
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { sources: frameAncestors, until: now + this.ttlMs });
    return frameAncestors.length > 0 ? frameAncestors : this.fallback;
  }
}
