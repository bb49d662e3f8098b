import { ExpiringCache, invalid, tenantKey, type CallContext } from "@emailsvc/runtime";
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
  private readonly cache: ExpiringCache<readonly string[]>;

  constructor(
    private readonly deps: SettingsDeps,
    private readonly fallback: readonly string[],
    ttlMs = 30_000,
    maxEntries = 10_000,
  ) {
    this.cache = new ExpiringCache(() => ttlMs, { maxEntries, now: () => this.deps.now() });
  }

  forget(tenant: string): void {
    this.cache.forget(tenant);
  }

  async forTenant(call: CallContext): Promise<readonly string[]> {
    const sources = await this.cache.get(tenantKey(call.tenant), async () => (await getPortalSettings(this.deps, call)).frameAncestors);
    return sources.length > 0 ? sources : this.fallback;
  }
}
