import { de } from "./de.js";
import { en, type MessageKey, type Messages } from "./en.js";
import { fr } from "./fr.js";
import { it } from "./it.js";

export type { MessageKey, Messages };

/** The portal's languages, in the switcher's order. */
export const LOCALES = ["en", "de", "fr", "it"] as const;
export type Locale = (typeof LOCALES)[number];

export const CATALOGUES: Readonly<Record<Locale, Messages>> = { en, de, fr, it };

export function isLocale(value: unknown): value is Locale {
  return typeof value === "string" && (LOCALES as readonly string[]).includes(value);
}

/**
 * The language of a page: the one asked for (the switcher), else the
 * subscriber's stored one, else the browser's best match (Accept-Language,
 * by q-value), else English.
 */
export function pickLocale(asked: string | undefined, stored: string | undefined, acceptLanguage: string | undefined): Locale {
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

/** A message with its `{name}` values filled in (as text: the page escapes it). */
export function message(messages: Messages, key: MessageKey, values: Record<string, string> = {}): string {
  return messages[key].replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}
