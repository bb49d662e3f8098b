// The languages the platform speaks to subscribers: the portal's pages, the
// one-click unsubscribe pages, a subscriber's stored `locale`, and tag
// translations. One list, so that a language is added in one place.

export const LOCALES = ["en", "de", "fr", "it"] as const;
export type Locale = (typeof LOCALES)[number];

export function isLocale(value: unknown): value is Locale {
  return typeof value === "string" && (LOCALES as readonly string[]).includes(value);
}

/**
 * The language of a page: the one asked for (a language switcher), else the
 * subscriber's stored one, else the browser's best match (Accept-Language,
 * by q-value, at most 20 entries read), else English.
 */
export function pickLocale(asked: string | null | undefined, stored: string | null | undefined, acceptLanguage: string | undefined): Locale {
  if (isLocale(asked)) return asked;
  if (isLocale(stored)) return stored;
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .slice(0, 20)
    .map((part, index) => {
      const [tag = "", ...params] = part.trim().split(";");
      const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/.exec(p)).find(Boolean);
      return { base: tag.trim().toLowerCase().split("-")[0]!, q: q ? Number(q[1]) : 1, index };
    })
    .filter((entry) => entry.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  return ranked.map((entry) => entry.base).find(isLocale) ?? "en";
}
