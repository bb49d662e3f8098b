import { createHash } from "node:crypto";
import { parseAddress } from "@emailsvc/address";
import { AppError, invalid } from "@emailsvc/errors";
import type { PublicErrorCode } from "./provider.js";

// Pure rules of emails: statuses, input validation, the idempotency hash. No I/O.

/**
 * Lifecycle: `queued` (stored, waiting for or in a send attempt) -> `sent`
 * (the provider took it), `deferred` (the relay said "not now" or could not be
 * reached: tried again at `next_attempt_at`, back to `sent` or on to a final
 * status), `bounced` (refused for good: hard at once on a 5xx, soft when the
 * retry window of a deferred email ends), `failed` (it could not be sent: no
 * relay within the window, template gone, campaign cancelled), `suppressed`
 * (the recipient may not get this mail: never handed to the provider).
 * `delivered` and `complained` are set later, by what providers and
 * recipients report.
 */
export const STATUSES = ["queued", "sent", "delivered", "deferred", "bounced", "complained", "failed", "suppressed"] as const;
export type EmailStatus = (typeof STATUSES)[number];

/** The statuses of an email still to be sent (a send attempt may claim it). */
export const PENDING_STATUSES = ["queued", "deferred"] as const satisfies readonly EmailStatus[];
export type PendingStatus = (typeof PENDING_STATUSES)[number];

/** The filter on `status` of every write that may only touch an email still to be sent. */
export const PENDING = { $in: [...PENDING_STATUSES] } as { $in: EmailStatus[] };

/** Statuses after which the email is never sent (again). */
export function isFinal(status: EmailStatus): boolean {
  return status !== "queued" && status !== "deferred";
}

/** Hard: refused for good at SMTP time (5xx); soft: "not now" (4xx) until the retry window ended. */
export type BounceType = "hard" | "soft";

export interface Bounce {
  type: BounceType;
  /** The relay's reply, addresses removed. */
  diagnostic: string;
}

/** One change of status, as the email's record keeps it. */
export interface StatusChange {
  status: EmailStatus;
  at: number;
  /** The relay's reply (deferred, bounced) or the reason's code (failed, suppressed); "" otherwise. */
  detail: string;
}

/** A provider's name in the registry (providers/registry.ts): `sandbox`, `smtp`, … (EMAIL_PROVIDER). */
export type ProviderName = string;

/** The provider that keeps messages instead of sending them. */
export const SANDBOX_PROVIDER: ProviderName = "sandbox";

/** Test-mode keys never reach a real recipient: whatever EMAIL_PROVIDER says, their mail goes to the sandbox. */
export function providerForTenant(tenant: string, liveProvider: ProviderName): ProviderName {
  return tenant.endsWith(":test") ? SANDBOX_PROVIDER : liveProvider;
}

/** An email as the service returns it. */
export interface EmailView {
  id: string;
  status: EmailStatus;
  to: string;
  templateId: string;
  templateSlug: string;
  templateVersion: number;
  idempotencyKey: string;
  provider: string;
  messageId: string;
  /** The provider's own id of the message (SES's MessageId), "" when none. */
  providerMessageId: string;
  /** Why it failed (see PUBLIC_ERRORS): the text people read, and the reason code reads; "" and undefined otherwise. */
  error: string;
  failureReason: PublicErrorCode | undefined;
  attempts: number;
  queuedAt: number;
  sentAt: number | null;
  failedAt: number | null;
  updatedAt: number;
  bounce: Bounce | undefined;
  /** Every status the email had, oldest first. */
  history: StatusChange[];
  /** When a deferred email is tried again; null otherwise. */
  nextAttemptAt: number | null;
}

export const LIMITS = {
  emailLength: 254,
  /** Variables as JSON (UTF-8 bytes); beyond it a 413. */
  variablesBytes: 64 * 1024,
  idempotencyKeyLength: 255,
  slugLength: 100,
} as const;

/**
 * Trims and checks the recipient against the platform's one rule
 * (@emailsvc/address, the subscribers service's too); returns it as given
 * (case kept). Nothing inside it is ever removed or replaced, so the address
 * stored is the address sent.
 */
export function validateRecipient(raw: unknown, field = "to"): string {
  // Checked first: a CR or LF anywhere is a header-injection attempt, not whitespace.
  if (typeof raw === "string" && /[\r\n]/.test(raw)) {
    throw invalid(`${field} is not a valid address`, [{ field, description: "must not contain line breaks" }]);
  }
  const parsed = parseAddress(raw);
  if (parsed.ok) return parsed.address;
  if (parsed.problem === "required") throw invalid(`${field} is required`, [{ field, description: "is required" }]);
  throw invalid(`${field} is not a valid address: it ${parsed.description}`, [{ field, description: "is not a valid email address" }]);
}

/** The lower-cased form stored beside the address, for lookups by recipient. */
export function recipientKey(to: string): string {
  return to.trim().toLowerCase();
}

export function validateSlug(raw: unknown, field = "template_slug"): string {
  if (typeof raw !== "string" || raw.trim() === "") {
    throw invalid("template_slug is required", [{ field, description: "is required" }]);
  }
  const slug = raw.trim();
  // eslint-disable-next-line no-control-regex
  if (slug.length > LIMITS.slugLength || /[\u0000-\u001f\u007f]/.test(slug)) {
    throw invalid("template_slug is invalid", [{ field, description: `1-${LIMITS.slugLength} characters, no control characters` }]);
  }
  return slug;
}

export type Variables = Record<string, unknown>;

/**
 * Variables are a JSON object (a protobuf Struct on the wire, so the type is
 * guaranteed there; the gateway checks it for REST), at most 64 KiB as JSON.
 */
export function validateVariables(raw: unknown, field = "variables"): Variables {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw invalid("variables must be an object", [{ field, description: "must be an object" }]);
  }
  const json = JSON.stringify(raw);
  if (Buffer.byteLength(json) > LIMITS.variablesBytes) {
    throw new AppError("too_large", "variables_too_large", `variables may be at most ${LIMITS.variablesBytes} bytes as JSON`, {
      fieldViolations: [{ field, description: `at most ${LIMITS.variablesBytes} bytes as JSON` }],
    });
  }
  return raw as Variables;
}

/** Optional key: empty means none; otherwise 1-255 printable ASCII characters. */
export function validateIdempotencyKey(raw: unknown, field = "idempotency_key"): string | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (typeof raw !== "string" || raw.length > LIMITS.idempotencyKeyLength || !/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(raw)) {
    throw invalid("idempotency_key is invalid", [
      { field, description: `1-${LIMITS.idempotencyKeyLength} printable ASCII characters, not starting or ending with a space` },
    ]);
  }
  return raw;
}

/** JSON with object keys sorted at every depth: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.keys(value)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(",")}}`;
}

/**
 * What "the same request" means for an idempotency key: sha256 of the
 * canonical JSON of the body's fields (Stripe compares the parameters too).
 */
export function requestHash(body: { templateSlug: string; to: string; variables: Variables; fromEmail?: string; fromName?: string; replyTo?: string }): string {
  // From and Reply-To join the hash only when given, so that keys stored before they existed still compare.
  const sender = {
    ...(body.fromEmail !== undefined ? { from_email: body.fromEmail } : {}),
    ...(body.fromName !== undefined ? { from_name: body.fromName } : {}),
    ...(body.replyTo !== undefined ? { reply_to: body.replyTo } : {}),
  };
  return createHash("sha256")
    .update(canonicalJson({ template_slug: body.templateSlug, to: body.to, variables: body.variables, ...sender }))
    .digest("hex");
}

/** Longest From display name taken. */
export const DISPLAY_NAME_MAX_LENGTH = 100;

/** A From display name: text without control characters or line breaks (a header carries it), 1-100 characters. */
export function validateDisplayName(raw: unknown, field = "from.name"): string {
  const name = typeof raw === "string" ? raw.trim() : "";
  // eslint-disable-next-line no-control-regex
  if (name === "" || name.length > DISPLAY_NAME_MAX_LENGTH || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalid(`${field} must be 1-${DISPLAY_NAME_MAX_LENGTH} characters without control characters or line breaks`, [
      { field, description: `must be 1-${DISPLAY_NAME_MAX_LENGTH} characters without control characters or line breaks` },
    ]);
  }
  return name;
}

export function idempotencyKeyReused(existingId: string): AppError {
  return new AppError("conflict", "idempotency_key_reused", "idempotency_key was already used with a different request", {
    existingId,
    fieldViolations: [{ field: "idempotency_key", description: "was used before with another body" }],
  });
}
