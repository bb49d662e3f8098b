// The `lang` of a message's <html>. MJML writes `lang="und"` (undetermined)
// unless the template says `<mjml lang="de">`; screen readers then guess the
// pronunciation and mail clients offer translations on a guess. A message
// gets, in this order: the language its template declares (the author knows
// what the content is written in), else the recipient's (a subscriber's
// `locale`: a template without a declared language is one whose content
// follows the recipient, e.g. by `{{#if}}` blocks), else English.

/** When neither the template nor the recipient names a language. */
export const DEFAULT_LANGUAGE = "en";

const HTML_TAG = /<html\b[^>]*>/i;
const UNDETERMINED = /(\slang=)(["'])und\2/i;
/** A BCP 47 tag as far as an attribute needs: letters, digits and dashes (`de`, `pt-BR`, `zh-Hant-TW`). */
const LANGUAGE_TAG = /^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$/;

/** Whether a version's HTML leaves its language undetermined (MJML's `lang="und"`), so that each message names one. */
export function languageUndetermined(html: string): boolean {
  const tag = HTML_TAG.exec(html);
  return tag !== null && UNDETERMINED.test(tag[0]);
}

/** A language usable as `lang`: the given tag when it is one, else DEFAULT_LANGUAGE. */
export function languageOf(given: string | undefined): string {
  return given !== undefined && LANGUAGE_TAG.test(given) ? given : DEFAULT_LANGUAGE;
}

/** The Handlebars data variable (`@…`) a version's <html> tag reads its language from (languageSlot). */
export const LANGUAGE_DATA = "emailsvcLanguage";

/**
 * A version's HTML with its <html> tag's `lang="und"` made a placeholder of
 * the language (`{{@emailsvcLanguage}}`, escaped like any value), so that a
 * message gets its language as it is rendered rather than by a search and a
 * copy of the whole rendered HTML (withLanguage). Only when nothing up to the
 * end of that tag is Handlebars: then the tag is the first <html> tag of every
 * message, the one withLanguage would change. Otherwise undefined.
 */
export function languageSlot(html: string): string | undefined {
  const tag = HTML_TAG.exec(html);
  if (!tag || html.slice(0, tag.index + tag[0].length).includes("{{")) return undefined;
  const named = tag[0].replace(UNDETERMINED, (_, attribute: string, quote: string) => `${attribute}${quote}{{@${LANGUAGE_DATA}}}${quote}`);
  if (named === tag[0]) return undefined;
  return html.slice(0, tag.index) + named + html.slice(tag.index + tag[0].length);
}

/** The rendered HTML with its <html> tag's `lang="und"` replaced by `language` (checked by languageOf). */
export function withLanguage(html: string, language: string): string {
  const tag = HTML_TAG.exec(html);
  if (!tag) return html;
  const named = tag[0].replace(UNDETERMINED, (_, attribute: string, quote: string) => `${attribute}${quote}${language}${quote}`);
  return html.slice(0, tag.index) + named + html.slice(tag.index + tag[0].length);
}
