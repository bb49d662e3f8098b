import { de } from "./de.js";
import { en, type MessageKey, type Messages } from "./en.js";
import { fr } from "./fr.js";
import { it } from "./it.js";

import type { Locale } from "@emailsvc/text";

export type { MessageKey, Messages };

/** The portal's languages, in the switcher's order: the platform's (@emailsvc/text). */
export { isLocale, LOCALES, pickLocale, type Locale } from "@emailsvc/text";

export const CATALOGUES: Readonly<Record<Locale, Messages>> = { en, de, fr, it };

/** A message with its `{name}` values filled in (as text: the page escapes it). */
export function message(messages: Messages, key: MessageKey, values: Record<string, string> = {}): string {
  return messages[key].replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}
