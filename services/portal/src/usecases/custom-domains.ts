import { ExpiringCache } from "@emailsvc/async";
import { AppError } from "@emailsvc/errors";
import { type CallContext } from "@emailsvc/tenancy";
import { checkCustomDomain } from "../domain/custom-domain.js";
import { initialProgress, restartedProgress, type CertificateStatus, type DomainState } from "../domain/domain-states.js";
import { DomainTakenError, type CustomDomainDoc, type DomainStorage } from "../storage/domains.js";

// What a customer (through the gateway, which checked the plan) may do about
// their account's custom domain. The claim is per ACCOUNT: the tenant's mode
// is ignored, and links of both modes use the domain once it is active.

/** The Kubernetes side of a domain (kube/routing.ts): its Ingress and Certificate. */
export interface DomainRouting {
  /** Creates the Ingress and the Certificate (owned by the Ingress) unless they exist. */
  ensure(target: DomainTarget): Promise<void>;
  /** The Certificate's verdict; `missing` when either object is gone. */
  status(target: DomainTarget): Promise<CertificateStatus>;
  /** Deletes both; absent ones are fine. */
  remove(target: DomainTarget): Promise<void>;
}

export interface DomainTarget {
  accountId: string;
  domain: string;
}

/** A CNAME lookup: the names the record points to; throws an error with `code` (ENODATA, ENOTFOUND, ETIMEOUT, …). */
export type CnameResolver = (domain: string) => Promise<string[]>;

export interface CustomDomainDeps {
  storage: DomainStorage;
  /** CUSTOM_DOMAINS_ENABLED=true; otherwise every call but resolve is UNAVAILABLE `custom_domains_not_enabled`. */
  enabled: boolean;
  /** CUSTOM_DOMAIN_TARGET: what the customer's CNAME points to. */
  target: string;
  /** The hosts of PUBLIC_API_URL, PREFERENCES_URL and CUSTOM_DOMAIN_TARGET: never a customer's. */
  platformHosts: readonly string[];
  now: () => number;
  /** Told when an account's claim changed (this replica's Host cache forgets it at once). */
  changed?: (accountId: string, domain: string) => void;
}

export interface CustomDomainView {
  domain: string;
  state: DomainState;
  dnsRecord: { name: string; type: "CNAME"; target: string };
  reason: string;
  lastCheckAt: number | null;
  nextCheckAt: number | null;
  createdAt: number;
  updatedAt: number;
  activatedAt: number | null;
}

export const notEnabled = () =>
  new AppError(
    "unavailable",
    "custom_domains_not_enabled",
    "Custom domains are not enabled on this deployment: the operator turns them on with CUSTOM_DOMAINS_ENABLED=true on Kubernetes with cert-manager (see the README, \"Custom portal domains\").",
  );

const notFound = () => new AppError("not_found", "custom_domain_not_found", "This account has no custom domain.");

function accountOf(call: CallContext): string {
  return call.tenant.accountId;
}

function view(doc: CustomDomainDoc, target: string): CustomDomainView {
  return {
    domain: doc.domain,
    state: doc.state,
    dnsRecord: { name: doc.domain, type: "CNAME", target },
    reason: doc.reason,
    lastCheckAt: doc.last_check_at,
    nextCheckAt: doc.next_check_at,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
    activatedAt: doc.activated_at,
  };
}

export async function getCustomDomain(deps: CustomDomainDeps, call: CallContext): Promise<CustomDomainView> {
  if (!deps.enabled) throw notEnabled();
  const doc = await deps.storage.forAccount(accountOf(call));
  if (!doc) throw notFound();
  return view(doc, deps.target);
}

/**
 * Claims `input` for the account. The same domain again changes nothing
 * when issuing or active, checks the DNS at once when pending_dns, and
 * starts over when it failed (attempts reset; the next certificate no
 * sooner than FAILED_HOST_GAP_MS after the failure); another domain
 * replaces the account's earlier one, whose objects are queued for deletion
 * first. Another account's domain is a conflict, whatever its state.
 */
export async function setCustomDomain(deps: CustomDomainDeps, call: CallContext, input: string): Promise<CustomDomainView> {
  if (!deps.enabled) throw notEnabled();
  const checked = checkCustomDomain(input, deps.platformHosts);
  if (!checked.ok) {
    throw new AppError("invalid", "invalid_domain", `domain ${checked.reason}.`, { fieldViolations: [{ field: "domain", description: checked.reason }] });
  }
  const { domain } = checked;
  const accountId = accountOf(call);
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = deps.now();
    try {
      const holder = await deps.storage.byDomain(domain);
      if (holder && holder._id !== accountId) throw new DomainTakenError();
      const current = await deps.storage.forAccount(accountId);
      if (!current) {
        const inserted = await deps.storage.insertClaim(accountId, domain, initialProgress(now), now);
        if (!inserted) continue;
        deps.changed?.(accountId, domain);
        return view(inserted, deps.target);
      }
      if (current.domain === domain && current.state === "pending_dns") {
        // "I fixed my DNS": looked at again at once (attempts are kept).
        return view((await deps.storage.checkNow(current, now)) ?? current, deps.target);
      }
      if (current.domain === domain && current.state !== "failed") return view(current, deps.target);
      // The earlier domain's objects go first (a removal whose domain is still claimed is dropped unused).
      if (current.domain !== domain) await deps.storage.queueRemoval(accountId, current.domain, now);
      // The same domain after a failed certificate waits out FAILED_HOST_GAP_MS from that failure (its last change).
      const progress = current.domain === domain && current.issuance_attempts > 0 ? restartedProgress(current.updated_at, now) : initialProgress(now);
      const replaced = await deps.storage.replaceClaim(current, domain, progress, now);
      if (!replaced) continue;
      deps.changed?.(accountId, current.domain);
      deps.changed?.(accountId, domain);
      return view(replaced, deps.target);
    } catch (err) {
      if (err instanceof DomainTakenError) {
        throw new AppError("conflict", "domain_taken", `${domain} is already claimed by another account.`, {
          fieldViolations: [{ field: "domain", description: "is already claimed by another account" }],
        });
      }
      throw err;
    }
  }
  throw new AppError("conflict", "concurrent_update", "The custom domain was changed at the same time; retry.");
}

/** Releases the account's domain at once; its objects are deleted in the background. */
export async function deleteCustomDomain(deps: CustomDomainDeps, call: CallContext): Promise<void> {
  if (!deps.enabled) throw notEnabled();
  const accountId = accountOf(call);
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.storage.forAccount(accountId);
    if (!current) throw notFound();
    await deps.storage.queueRemoval(accountId, current.domain, deps.now());
    if (await deps.storage.deleteClaim(current)) {
      deps.changed?.(accountId, current.domain);
      return;
    }
  }
  throw new AppError("conflict", "concurrent_update", "The custom domain was changed at the same time; retry.");
}

/** The account's active domain, or "" (links then use PREFERENCES_URL). */
export async function resolveCustomDomain(deps: CustomDomainDeps, call: CallContext): Promise<string> {
  if (!deps.enabled) return "";
  const doc = await deps.storage.forAccount(accountOf(call));
  return doc?.state === "active" ? doc.domain : "";
}

/**
 * Which account an active custom domain serves, per Host, read through a
 * short cache (every page request asks). Unknown and inactive hosts are
 * cached too, for less long, so that requests with made-up Host headers do
 * not each reach the database.
 */
export class ActiveDomainCache {
  private readonly cache: ExpiringCache<string | null>;

  constructor(
    private readonly storage: DomainStorage,
    now: () => number,
    ttlMs = 30_000,
    missTtlMs = 5_000,
    maxEntries = 10_000,
  ) {
    this.cache = new ExpiringCache((accountId) => (accountId ? ttlMs : missTtlMs), { maxEntries, now });
  }

  forget(domain: string): void {
    this.cache.forget(domain);
  }

  /** The account whose active domain `host` is, or null. */
  accountOf(host: string): Promise<string | null> {
    return this.cache.get(host, async () => {
      const doc = await this.storage.byDomain(host);
      return doc?.state === "active" ? doc._id : null;
    });
  }
}
