import { invalid } from "@emailsvc/errors";
import { hasVisibleText, visibleTextRule, isLocale, LOCALES, trimInvisible, type Locale } from "@emailsvc/text";

/** A tag's name and description in one language. */
export interface TagTranslation {
  name: string;
  description: string;
}

/** Translations by locale (only the platform's languages). */
export type TagTranslations = Partial<Record<Locale, TagTranslation>>;

export interface TagView {
  id: string;
  name: string;
  description: string;
  isPublic: boolean;
  translations: TagTranslations;
  /** Subscribers holding it (any status; erased ones gone). */
  subscriberCount: number;
  createdAt: number;
  updatedAt: number;
}

export const TAG_LIMITS = { nameLength: 100, descriptionLength: 500 } as const;

/**
 * Tag names identify tags in the subscriber API (and appear in URL paths), so
 * they are trimmed, non-empty, without control characters or "/", and unique
 * per tenant regardless of case ("VIP" and "vip" are one tag).
 */
export function validateTagName(raw: unknown, field = "name"): string {
  if (typeof raw !== "string" || raw.trim() === "") {
    throw invalid("tag name is required", [{ field, description: "is required" }]);
  }
  const name = raw.trim();
  // eslint-disable-next-line no-control-regex
  if (name.length > TAG_LIMITS.nameLength || /[\u0000-\u001f\u007f/]/.test(name)) {
    throw invalid("tag name is invalid", [
      { field, description: `1-${TAG_LIMITS.nameLength} characters, no control characters or "/"` },
    ]);
  }
  return name;
}

export function tagKey(name: string): string {
  return name.trim().toLowerCase();
}

export function validateDescription(raw: string, field = "description"): string {
  if (raw.length > TAG_LIMITS.descriptionLength) {
    throw invalid("description is too long", [{ field, description: `at most ${TAG_LIMITS.descriptionLength} characters` }]);
  }
  return raw;
}

/** Validates a list of names from a request, dropping duplicates (case-insensitive). */
export function validateTagNames(raw: readonly unknown[], field = "tags", max = 100): string[] {
  if (raw.length > max) throw invalid(`at most ${max} tags per request`, [{ field, description: `at most ${max} tags` }]);
  const seen = new Map<string, string>();
  raw.forEach((value, i) => {
    const name = validateTagName(value, `${field}[${i}]`);
    if (!seen.has(tagKey(name))) seen.set(tagKey(name), name);
  });
  return [...seen.values()];
}

/**
 * Translations as given on create or update: keys of the platform's
 * languages only; each name 1-100 characters with visible text and no
 * control characters (trimmed; "/" is fine, a translation never names the
 * tag in a path), each description at most 500 characters. Translations are
 * what subscribers read; the tag's `name` stays its identity.
 */
export function validateTranslations(raw: Readonly<Record<string, { name: string; description: string }>>, field = "translations"): TagTranslations {
  const out: TagTranslations = {};
  for (const [locale, translation] of Object.entries(raw)) {
    if (!isLocale(locale)) {
      throw invalid("translations name a language the platform does not speak", [{ field: `${field}.${locale}`, description: `is not one of ${LOCALES.join(", ")}` }]);
    }
    const name = trimInvisible(translation.name);
    // eslint-disable-next-line no-control-regex
    if (!hasVisibleText(name) || name.length > TAG_LIMITS.nameLength || /[\u0000-\u001f\u007f]/.test(name)) {
      throw invalid("a translated name is invalid", [
        { field: `${field}.${locale}.name`, description: visibleTextRule(TAG_LIMITS.nameLength) },
      ]);
    }
    out[locale] = { name, description: validateDescription(translation.description, `${field}.${locale}.description`) };
  }
  return out;
}
