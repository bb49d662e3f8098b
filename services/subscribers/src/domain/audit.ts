import { isIP } from "node:net";
import { invalid, type Violation } from "@emailsvc/errors";

// How a change reached the platform, as the audit trail keeps it. Pure rules, no I/O.

/** The ways a subscription change comes: the REST API, the preference portal, a one-click unsubscribe link, a bulk import, a public signup form. */
export const AUDIT_SOURCES = ["api", "portal", "one_click", "import", "form"] as const;
export type AuditSource = (typeof AUDIT_SOURCES)[number];

/** Longest user agent kept (the edge cuts longer ones to this). */
export const USER_AGENT_MAX = 512;

/**
 * How a request came: its source, and the client's IP address and user agent
 * (personal data: kept in the subscriber's audit trail only, exported and
 * erased with it). `source` is "" when the caller did not say.
 */
export interface AuditInfo {
  source: AuditSource | "";
  ip: string;
  userAgent: string;
}

export const NO_AUDIT: AuditInfo = { source: "", ip: "", userAgent: "" };

/** Checks an AuditContext of a request; absent means the caller said nothing. */
export function validateAudit(raw: { source: string; ip: string; userAgent: string } | undefined): AuditInfo {
  if (!raw) return NO_AUDIT;
  const violations: Violation[] = [];
  if (raw.source !== "" && !(AUDIT_SOURCES as readonly string[]).includes(raw.source)) {
    violations.push({ field: "audit.source", description: `one of ${AUDIT_SOURCES.join(", ")}` });
  }
  if (raw.ip !== "" && isIP(raw.ip) === 0) violations.push({ field: "audit.ip", description: "an IPv4 or IPv6 address" });
  if (raw.userAgent.length > USER_AGENT_MAX) violations.push({ field: "audit.user_agent", description: `at most ${USER_AGENT_MAX} characters` });
  // eslint-disable-next-line no-control-regex
  else if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(raw.userAgent)) violations.push({ field: "audit.user_agent", description: "no control characters" });
  if (violations.length > 0) throw invalid("audit context is invalid", violations);
  return { source: raw.source as AuditSource | "", ip: raw.ip, userAgent: raw.userAgent };
}
