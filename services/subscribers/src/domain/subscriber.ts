import { parseAddress } from "@emailsvc/address";
import { AppError, invalid, type Violation } from "@emailsvc/errors";
import { LOCALES, type Locale as PlatformLocale } from "@emailsvc/text";

// Pure rules of subscribers: statuses, email and metadata validation. No I/O.

export const STATUSES = ["active", "unsubscribed", "bounced", "complained", "pending"] as const;
export type Status = (typeof STATUSES)[number];

/** The languages subscribers can choose (the platform's, @emailsvc/text); "" is "not set". */
export type Locale = PlatformLocale | "";

export type MetadataValue = string | number | boolean;
export type Metadata = Record<string, MetadataValue>;

/** A subscriber as the service returns it (tag names resolved). */
export interface SubscriberView {
  id: string;
  email: string;
  status: Status;
  locale: Locale;
  metadata: Metadata;
  tags: string[];
  createdAt: number;
  updatedAt: number;
}

// Limits in the spirit of Stripe's metadata: enough for integration ids and
// attributes, small enough to keep documents and exports lean.
export const LIMITS = {
  emailLength: 254,
  metadataKeys: 50,
  metadataKeyLength: 40,
  metadataStringLength: 500,
  metadataBytes: 8 * 1024,
  tagsPerRequest: 100,
} as const;

/**
 * Trims and checks an address against the platform's one rule
 * (@emailsvc/address: RFC 5321/5322 dot-atom, ASCII, lengths); returns it as
 * given (case kept). Nothing inside it is ever removed or replaced.
 */
export function validateEmail(raw: unknown, field = "email"): string {
  const parsed = parseAddress(raw);
  if (parsed.ok) return parsed.address;
  if (parsed.problem === "required") throw invalid("email is required", [{ field, description: "is required" }]);
  throw invalid(`email is not a valid address: it ${parsed.description}`, [{ field, description: "is not a valid email address" }]);
}

/** The form used for uniqueness and lookup: addresses compare case-insensitively. */
export function emailKey(email: string): string {
  return email.trim().toLowerCase();
}

/** A locale given on create or update: one of LOCALES, or "" (not set). */
export function validateLocale(raw: unknown, field = "locale"): Locale {
  if (raw === "" || (typeof raw === "string" && (LOCALES as readonly string[]).includes(raw))) return raw as Locale;
  throw invalid("locale is not supported", [{ field, description: `one of ${LOCALES.join(", ")}, or empty to unset` }]);
}

export function isStatus(value: string): value is Status {
  return (STATUSES as readonly string[]).includes(value);
}

const METADATA_KEY = /^[A-Za-z0-9_][A-Za-z0-9_\-]*$/;

/**
 * The metadata key rule (safe as a document field name: no `.` or `$`), for
 * metadata and for filters on it. `__proto__` is no field name any store keeps
 * (JavaScript makes it the object's prototype; @emailsvc/storage refuses it):
 * a condition on it would be a 500, so it is refused here with the rest.
 */
export function isMetadataKey(key: string): boolean {
  return key.length <= LIMITS.metadataKeyLength && METADATA_KEY.test(key) && key !== "__proto__";
}

export const METADATA_KEY_RULE = `keys are 1-${LIMITS.metadataKeyLength} characters of letters, digits, _ and - (not __proto__)`;

/**
 * Checks metadata given on create (`allowNull` false) or as a merge patch on
 * update (`allowNull` true: null removes the key). Keys are restricted so they
 * are safe as document field names (no `.` or `$`).
 */
export function validateMetadata(raw: Record<string, unknown>, allowNull: boolean): Record<string, MetadataValue | null> {
  const violations: Violation[] = [];
  const keys = Object.keys(raw);
  if (keys.length > LIMITS.metadataKeys) {
    throw new AppError("too_large", "metadata_too_large", `metadata may hold at most ${LIMITS.metadataKeys} keys`, {
      fieldViolations: [{ field: "metadata", description: `at most ${LIMITS.metadataKeys} keys` }],
    });
  }
  for (const key of keys) {
    const value = raw[key];
    const field = `metadata.${key}`;
    if (!isMetadataKey(key)) {
      violations.push({ field, description: METADATA_KEY_RULE });
    } else if (value === null) {
      if (!allowNull) violations.push({ field, description: "null is only allowed on update, to remove a key" });
    } else if (typeof value === "string") {
      if (value.length > LIMITS.metadataStringLength) {
        violations.push({ field, description: `strings are at most ${LIMITS.metadataStringLength} characters` });
      }
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) violations.push({ field, description: "must be a finite number" });
    } else if (typeof value !== "boolean") {
      violations.push({ field, description: "values are strings, numbers or booleans" });
    }
  }
  if (violations.length > 0) throw invalid("metadata is invalid", violations);
  return raw as Record<string, MetadataValue | null>;
}

/** Applies a merge patch and checks the size of the result. */
export function mergeMetadata(current: Metadata, patch: Record<string, MetadataValue | null>): Metadata {
  const next: Metadata = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  checkMetadataSize(next);
  return next;
}

export function checkMetadataSize(metadata: Metadata): void {
  if (Object.keys(metadata).length > LIMITS.metadataKeys) {
    throw new AppError("too_large", "metadata_too_large", `metadata may hold at most ${LIMITS.metadataKeys} keys`, {
      fieldViolations: [{ field: "metadata", description: `at most ${LIMITS.metadataKeys} keys` }],
    });
  }
  if (Buffer.byteLength(JSON.stringify(metadata)) > LIMITS.metadataBytes) {
    throw new AppError("too_large", "metadata_too_large", `metadata may be at most ${LIMITS.metadataBytes} bytes as JSON`, {
      fieldViolations: [{ field: "metadata", description: `at most ${LIMITS.metadataBytes} bytes as JSON` }],
    });
  }
}
