import { invalid } from "@emailsvc/errors";
import { hasVisibleText } from "@emailsvc/text";

// Double opt-in and consent: the account's settings, and the wording of an
// opt-in a consent record keeps. Pure rules, no I/O.

/**
 * An account's double opt-in settings. `doubleOptIn` covers SignUp (forms, the
 * portal): a stranger can type anyone's address into a public form, so the
 * default is on. `doubleOptInForApi` covers CreateSubscriber: an integrator
 * creating subscribers server-side usually holds its own consent, so the
 * default is off (a request can still ask for it, `double_opt_in`).
 */
export interface AudienceSettings {
  doubleOptIn: boolean;
  doubleOptInForApi: boolean;
  /** How long an unconfirmed subscriber is kept before the expiry sweep erases it. */
  confirmationExpirySeconds: number;
  /** The account's confirmation template (slug); "" for the platform's own. */
  confirmationTemplate: string;
}

export const CONFIRMATION_EXPIRY = { defaultSeconds: 7 * 24 * 3600, minSeconds: 60, maxSeconds: 90 * 24 * 3600 } as const;

export const DEFAULT_AUDIENCE_SETTINGS: AudienceSettings = {
  doubleOptIn: true,
  doubleOptInForApi: false,
  confirmationExpirySeconds: CONFIRMATION_EXPIRY.defaultSeconds,
  confirmationTemplate: "",
};

export interface AudienceSettingsPatch {
  doubleOptIn?: boolean;
  doubleOptInForApi?: boolean;
  confirmationExpirySeconds?: number;
  confirmationTemplate?: string;
}

/** Template slugs as the templates service keeps them. */
const SLUG = /^[a-z0-9][a-z0-9_-]{0,99}$/;

/** Checks a change of the settings; the fields it leaves out keep their values. */
export function applySettingsPatch(current: AudienceSettings, patch: AudienceSettingsPatch, minExpirySeconds: number = CONFIRMATION_EXPIRY.minSeconds): AudienceSettings {
  const expiry = patch.confirmationExpirySeconds;
  if (expiry !== undefined && (!Number.isInteger(expiry) || expiry < minExpirySeconds || expiry > CONFIRMATION_EXPIRY.maxSeconds)) {
    throw invalid("confirmation_expiry_seconds is out of range", [
      { field: "confirmation_expiry_seconds", description: `a whole number of seconds from ${minExpirySeconds} to ${CONFIRMATION_EXPIRY.maxSeconds} (90 days)` },
    ]);
  }
  const template = patch.confirmationTemplate;
  if (template !== undefined && template !== "" && !SLUG.test(template)) {
    throw invalid("confirmation_template is not a template slug", [
      { field: "confirmation_template", description: "a template slug (lower-case letters, digits, _ and -), or empty for the platform's confirmation mail" },
    ]);
  }
  return {
    doubleOptIn: patch.doubleOptIn ?? current.doubleOptIn,
    doubleOptInForApi: patch.doubleOptInForApi ?? current.doubleOptInForApi,
    confirmationExpirySeconds: expiry ?? current.confirmationExpirySeconds,
    confirmationTemplate: template ?? current.confirmationTemplate,
  };
}

/** What the person saw when they opted in, as a consent record keeps it. */
export interface ConsentWording {
  text: string;
  version: string;
  sourceId: string;
}

export const CONSENT_LIMITS = { text: 2000, version: 100, sourceId: 100 } as const;

/** Checks the optional wording of an opt-in; undefined when nothing was given. */
export function validateConsentWording(raw: { text: string; version: string; sourceId: string } | undefined): ConsentWording | undefined {
  if (!raw || (raw.text === "" && raw.version === "" && raw.sourceId === "")) return undefined;
  const violations = [];
  if (raw.text.length > CONSENT_LIMITS.text) violations.push({ field: "consent.text", description: `at most ${CONSENT_LIMITS.text} characters` });
  else if (raw.text !== "" && !hasVisibleText(raw.text)) violations.push({ field: "consent.text", description: "visible text, or empty" });
  if (raw.version.length > CONSENT_LIMITS.version) violations.push({ field: "consent.version", description: `at most ${CONSENT_LIMITS.version} characters` });
  // eslint-disable-next-line no-control-regex
  else if (/[\u0000-\u001f\u007f]/.test(raw.version)) violations.push({ field: "consent.version", description: "no control characters" });
  if (raw.sourceId.length > CONSENT_LIMITS.sourceId) violations.push({ field: "consent.source_id", description: `at most ${CONSENT_LIMITS.sourceId} characters` });
  // eslint-disable-next-line no-control-regex
  else if (/[\u0000-\u001f\u007f]/.test(raw.sourceId)) violations.push({ field: "consent.source_id", description: "no control characters" });
  if (violations.length > 0) throw invalid("consent is invalid", violations);
  return { text: raw.text, version: raw.version, sourceId: raw.sourceId };
}

/** The wording as an audit record's data holds it (snake_case, empty fields left out). */
export function consentData(wording: ConsentWording | undefined): Record<string, string> | undefined {
  if (!wording) return undefined;
  return {
    ...(wording.text ? { text: wording.text } : {}),
    ...(wording.version ? { version: wording.version } : {}),
    ...(wording.sourceId ? { source_id: wording.sourceId } : {}),
  };
}

export function pendingNotSettable() {
  return invalid("status pending comes from double opt-in only", [
    { field: "status", description: "active, unsubscribed, bounced or complained; ask for double opt-in (double_opt_in) to create a pending subscriber" },
  ]);
}
