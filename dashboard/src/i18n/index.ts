// The dashboard's words live in message catalogues, one JSON file per
// language (en.json is the reference: its keys are the type of a message key,
// and dashboard/test/catalogues.test.ts fails when another catalogue lacks
// one or has one more). English is bundled; other languages load on demand.
// `{name}` in a message is replaced by the value of `name`.

import en from "./en.json";

export type MessageKey = keyof typeof en;
export type Locale = "en" | "de";
export const LOCALES: readonly { code: Locale; name: string }[] = [
  { code: "en", name: "English" },
  { code: "de", name: "Deutsch" },
];

const LOCALE_KEY = "emailsvc.locale";
let locale: Locale = "en";
let messages: Record<string, string> = en;

const loaders: Record<Locale, () => Promise<Record<string, string>>> = {
  en: async () => en,
  de: async () => (await import("./de.json")).default,
};

/** The locale the member picked before, else the browser's first supported language, else English. */
export function preferredLocale(): Locale {
  try {
    const stored = localStorage.getItem(LOCALE_KEY);
    if (stored === "en" || stored === "de") return stored;
  } catch {}
  for (const tag of navigator.languages ?? [navigator.language]) {
    const base = tag.toLowerCase().split("-")[0];
    if (base === "de" || base === "en") return base;
  }
  return "en";
}

/** Loads a catalogue and makes it current (the app re-renders after). */
export async function loadLocale(next: Locale, remember = false): Promise<void> {
  messages = await loaders[next]();
  locale = next;
  document.documentElement.lang = next;
  if (remember) {
    try {
      localStorage.setItem(LOCALE_KEY, next);
    } catch {}
  }
}

export function currentLocale(): Locale {
  return locale;
}

/** The message in the current language (English when the catalogue lacks it), with `{name}` placeholders filled. */
export function t(key: MessageKey, values?: Record<string, string | number>): string {
  const template = messages[key] ?? en[key] ?? key;
  if (!values) return template;
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? String(values[name]) : whole));
}

/** `key.one` or `key.other` by the count (the plural rules of the language), with `{count}` filled. */
export function tn(key: string, count: number, values?: Record<string, string | number>): string {
  const form = new Intl.PluralRules(locale).select(count) === "one" ? "one" : "other";
  return t(`${key}.${form}` as MessageKey, { count: formatNumber(count), ...values });
}

export function formatNumber(value: number): string {
  return new Intl.NumberFormat(locale).format(value);
}

export function formatPercent(ratio: number): string {
  return new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 2 }).format(ratio);
}

/** A date and time in the member's time zone; empty for none. */
export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short" }).format(date);
}
