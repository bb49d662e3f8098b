// The life of a custom domain, as pure functions of (progress, observation,
// now). The reconciler (usecases/reconcile-domains.ts) observes (DNS, the
// Certificate's conditions, the issuance budget), calls these, stores the
// result with one guarded update and carries out the effect.
//
//   pending_dns --CNAME seen, budget allows--> issuing --Ready=True--> active
//        |  ^                                    |                        |
//        |  '----- retry (backoff) ---- failed <-'----- Ready=False ------'
//        '--no CNAME within the DNS timeout--> failed (until set again)
//
// What protects the certificate authority's limits (Let's Encrypt: 300 new
// orders per account per 3 hours, 5 failed validations per host per hour):
// no Certificate before the CNAME points at us; new Certificates drawn from
// one platform-wide budget (CUSTOM_DOMAIN_ISSUE_RATE); a failed issuance
// deletes its Certificate (so cert-manager does not keep retrying on its own)
// and is retried after retryBaseMs, doubling, at most maxIssuanceAttempts
// times, each retry checking the DNS again first.

export type DomainState = "pending_dns" | "issuing" | "active" | "failed";

export interface Progress {
  state: DomainState;
  /** What is wrong or what happens next, for the customer; "" when nothing is. */
  reason: string;
  /** DNS checks made since the domain (re)entered pending_dns. */
  dnsChecks: number;
  /** When DNS checking (re)started. */
  dnsSince: number;
  /** When the current Certificate was created. */
  issuingSince: number | null;
  /** Certificates asked for since the customer set the domain. */
  issuanceAttempts: number;
  lastCheckAt: number | null;
  /** When the reconciler looks again; null: never by itself. */
  nextCheckAt: number | null;
  activatedAt: number | null;
  /** Nothing is checked or asked for before this (0: no such bound); see FAILED_HOST_GAP_MS. */
  notBefore: number;
}

export interface Timing {
  /** First interval of the DNS and certificate re-checks; doubles per check (CUSTOM_DOMAIN_RECHECK_BASE_MS). */
  recheckBaseMs: number;
  /** Longest interval between DNS checks. */
  dnsMaxIntervalMs: number;
  /** Longest interval between checks of a Certificate being issued. */
  statusMaxIntervalMs: number;
  /** How long to wait for the CNAME before failing (CUSTOM_DOMAIN_DNS_TIMEOUT_SECONDS). */
  dnsTimeoutMs: number;
  /** How long a Certificate may take to become Ready (CUSTOM_DOMAIN_ISSUE_TIMEOUT_SECONDS). */
  issueTimeoutMs: number;
  /** How often an active domain's Certificate is looked at again. */
  activeRecheckMs: number;
  /** First wait before a failed issuance is retried; doubles per attempt (CUSTOM_DOMAIN_RETRY_BASE_SECONDS). */
  retryBaseMs: number;
  /** Certificates asked for per domain before giving up until the customer sets it again (CUSTOM_DOMAIN_MAX_ATTEMPTS). */
  maxIssuanceAttempts: number;
}

export const DEFAULT_TIMING: Timing = {
  recheckBaseMs: 30_000,
  dnsMaxIntervalMs: 3_600_000,
  statusMaxIntervalMs: 120_000,
  dnsTimeoutMs: 72 * 3_600_000,
  issueTimeoutMs: 3_600_000,
  activeRecheckMs: 3_600_000,
  retryBaseMs: 3_600_000,
  maxIssuanceAttempts: 5,
};

/** A duration as people say it: "72 hours", "1 hour", "30 minutes", "45 seconds". */
export function spoken(ms: number): string {
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  if (ms >= 3_600_000) return plural(Math.round(ms / 3_600_000), "hour");
  if (ms >= 60_000) return plural(Math.round(ms / 60_000), "minute");
  return plural(Math.round(ms / 1000), "second");
}

/** base·2^n, at most max. */
export function backoff(baseMs: number, n: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(n, 0), 30));
}

/**
 * Let's Encrypt allows 5 failed validations per host per hour. Setting a
 * failed domain again starts it over, but its next certificate is asked for
 * no sooner than this after the failure, so that a customer retrying (or a
 * script) cannot spend that allowance: at most 4 an hour per host.
 */
export const FAILED_HOST_GAP_MS = 15 * 60_000;

/** A failed domain set again by its customer (failed at `failedAt`): checked from scratch, once the gap after the failure has passed. */
export function restartedProgress(failedAt: number, now: number): Progress {
  const at = Math.max(now, failedAt + FAILED_HOST_GAP_MS);
  if (at === now) return initialProgress(now);
  return {
    ...initialProgress(now),
    nextCheckAt: at,
    notBefore: at,
    reason: `a certificate for this host failed at ${new Date(failedAt).toISOString()}; to stay within the certificate authority's limit of failed validations per host, it is checked and asked for again from ${new Date(at).toISOString()}`,
  };
}

/** A domain just set (or set again after a failure). */
export function initialProgress(now: number): Progress {
  return {
    state: "pending_dns",
    reason: "",
    dnsChecks: 0,
    dnsSince: now,
    issuingSince: null,
    issuanceAttempts: 0,
    lastCheckAt: null,
    nextCheckAt: now,
    activatedAt: null,
    notBefore: 0,
  };
}

/** What a CNAME lookup said (node:dns error codes as they are, e.g. ENODATA, ENOTFOUND, ETIMEOUT). */
export type CnameAnswer = { cnames: string[] } | { error: string };

/** Whether the domain's CNAME points at the target; if not, why, in words the customer can act on. */
export function dnsVerdict(domain: string, target: string, answer: CnameAnswer): { ok: true } | { ok: false; reason: string } {
  const wanted = `create a CNAME record: ${domain} CNAME ${target}`;
  if ("error" in answer) {
    if (answer.error === "ENODATA" || answer.error === "ENOTFOUND" || answer.error === "NXDOMAIN") {
      return { ok: false, reason: `no CNAME record for ${domain} is visible yet; ${wanted} (DNS changes can take a while to propagate)` };
    }
    return { ok: false, reason: `the DNS lookup of ${domain} failed (${answer.error}); it is tried again. If it persists, check that ${domain} CNAME ${target} exists` };
  }
  const seen = answer.cnames.map((name) => name.toLowerCase().replace(/\.$/, ""));
  if (seen.includes(target)) return { ok: true };
  if (seen.length === 0) return { ok: false, reason: `no CNAME record for ${domain} is visible yet; ${wanted}` };
  return { ok: false, reason: `the CNAME of ${domain} points to ${seen.join(", ")}, expected ${target}` };
}

export type Step =
  /** Store the progress; nothing else to do. */
  | { progress: Progress; effect: "none" }
  /** The DNS is right: draw from the issuance budget, then create the objects (issued) or wait (queued). */
  | { progress: Progress; effect: "issue" }
  /** Store the progress and delete the domain's Certificate and Ingress. */
  | { progress: Progress; effect: "remove_objects" };

/** After a DNS check in pending_dns. */
export function afterDnsCheck(p: Progress, verdict: ReturnType<typeof dnsVerdict>, now: number, t: Timing): Step {
  const checked = { ...p, lastCheckAt: now, dnsChecks: p.dnsChecks + 1 };
  if (verdict.ok) return { progress: { ...checked, reason: "" }, effect: "issue" };
  if (now - p.dnsSince >= t.dnsTimeoutMs) {
    return {
      progress: {
        ...checked,
        state: "failed",
        reason: `${verdict.reason}. Gave up after ${spoken(t.dnsTimeoutMs)}: create the record, then set the domain again`,
        nextCheckAt: null,
      },
      effect: "none",
    };
  }
  return {
    progress: { ...checked, state: "pending_dns", reason: verdict.reason, nextCheckAt: now + backoff(t.recheckBaseMs, p.dnsChecks, t.dnsMaxIntervalMs) },
    effect: "none",
  };
}

/** The issuance budget has no room: wait for it, DNS already right. */
export function queued(p: Progress, now: number, retryAfterMs: number): Progress {
  return {
    ...p,
    state: "pending_dns",
    reason: "the DNS record is right; the certificate is queued (certificates are issued at a limited rate) and requested shortly",
    nextCheckAt: now + Math.max(retryAfterMs, 1000),
  };
}

/** The Certificate and the Ingress were created. */
export function issued(p: Progress, now: number, t: Timing): Progress {
  return {
    ...p,
    state: "issuing",
    reason: "",
    issuingSince: now,
    issuanceAttempts: p.issuanceAttempts + 1,
    nextCheckAt: now + Math.min(t.recheckBaseMs, t.statusMaxIntervalMs),
  };
}

/** What the domain's Certificate says, as certificateVerdict reads its conditions. */
export type CertificateStatus =
  | { kind: "missing" }
  | { kind: "ready" }
  | { kind: "pending"; message: string }
  | { kind: "failed"; message: string };

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

/** Ready=False reasons that mean "not issued yet" rather than "went wrong". */
const READY_FALSE_IN_PROGRESS = new Set(["", "DoesNotExist", "Pending", "InProgress", "Issuing"]);
const MAX_MESSAGE = 500;

/**
 * A cert-manager Certificate's status.conditions, read: Ready=True is ready;
 * Issuing=False/Failed is a failed issuance (cert-manager's message says why,
 * e.g. the ACME challenge's error); while Issuing=True it is pending whatever
 * Ready says; Ready=False for another reason than "no certificate yet" is a
 * failure with that reason.
 */
export function certificateVerdict(conditions: readonly Condition[] | undefined): CertificateStatus {
  const find = (type: string) => (conditions ?? []).find((c) => c.type === type);
  const ready = find("Ready");
  const issuing = find("Issuing");
  const say = (c: Condition) => [c.reason, c.message].filter((s) => s && s.trim() !== "").join(": ").slice(0, MAX_MESSAGE);
  if (ready?.status === "True") return { kind: "ready" };
  if (issuing?.status === "False" && issuing.reason === "Failed") return { kind: "failed", message: say(issuing) || "no reason given" };
  if (issuing?.status === "True") return { kind: "pending", message: say(issuing) };
  if (ready?.status === "False" && !READY_FALSE_IN_PROGRESS.has(ready.reason ?? "")) return { kind: "failed", message: say(ready) };
  return { kind: "pending", message: ready ? say(ready) : "" };
}

/** A failed issuance: objects go, a retry is planned unless the attempts are spent. */
function failure(p: Progress, now: number, t: Timing, reason: string): Step {
  const retry = p.issuanceAttempts < t.maxIssuanceAttempts;
  return {
    progress: {
      ...p,
      state: "failed",
      reason: retry ? reason : `${reason}. No more automatic retries after ${p.issuanceAttempts} attempts: fix it, then set the domain again`,
      issuingSince: null,
      nextCheckAt: retry ? now + backoff(t.retryBaseMs, p.issuanceAttempts - 1, 32 * t.retryBaseMs) : null,
    },
    effect: "remove_objects",
  };
}

/** After a look at the Certificate of an issuing or active domain. */
export function afterCertificateCheck(p: Progress, status: CertificateStatus, now: number, t: Timing): Step {
  const checked = { ...p, lastCheckAt: now };
  switch (status.kind) {
    case "ready":
      return {
        progress: { ...checked, state: "active", reason: "", issuingSince: null, activatedAt: p.activatedAt ?? now, nextCheckAt: now + t.activeRecheckMs },
        effect: "none",
      };
    case "failed":
      return failure(checked, now, t, `certificate issuance failed: ${status.message}`);
    case "missing":
      // Deleted behind our back (or never made, after a crash): check the DNS and ask again.
      return { progress: { ...checked, state: "pending_dns", reason: "", dnsChecks: 0, dnsSince: now, issuingSince: null, nextCheckAt: now }, effect: "none" };
    case "pending": {
      if (p.state === "active") {
        // A renewal under way: the current certificate still serves.
        return { progress: { ...checked, nextCheckAt: now + Math.min(t.activeRecheckMs, t.statusMaxIntervalMs) }, effect: "none" };
      }
      const since = p.issuingSince ?? now;
      if (now - since >= t.issueTimeoutMs) {
        const said = status.message ? ` (cert-manager: ${status.message})` : "";
        return failure(checked, now, t, `certificate issuance timed out after ${spoken(t.issueTimeoutMs)}${said}`);
      }
      const waited = Math.max(0, Math.round((now - since) / Math.max(t.recheckBaseMs, 1)));
      return { progress: { ...checked, nextCheckAt: now + backoff(t.recheckBaseMs, Math.floor(Math.log2(waited + 1)), t.statusMaxIntervalMs) }, effect: "none" };
    }
  }
}

/** A failed domain whose retry time came: the DNS is checked again first. */
export function retry(p: Progress, now: number): Progress {
  return { ...p, state: "pending_dns", dnsChecks: 0, dnsSince: now, nextCheckAt: now };
}
