import { createHash } from "node:crypto";
import { MailingBlock } from "@emailsvc/proto";
import type { PortalTagView, PreferencesView } from "../usecases/preferences.js";
import { CATALOGUES, LOCALES, message, type Locale, type MessageKey, type Messages } from "./messages/index.js";

// The portal's pages: server-rendered HTML that works without JavaScript
// (every action is a form posting to the same origin), no third-party
// request, one inline style sheet allowed by its hash, well under 30 KB.

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Colours meet WCAG 2.1 AA contrast (4.5:1 for text) on white; focus is
// always visible; targets are at least 44 px high on a phone.
export const STYLE = `
:root{color-scheme:light;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.5;color:#1f2328;background:#fff}
body{margin:0}
main{max-width:40rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
p{margin:.5rem 0}
ul{list-style:none;margin:0;padding:0}
.tags li{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;justify-content:space-between;border-top:1px solid #d0d7de;padding:.75rem 0}
.tag{flex:1 1 12rem;min-width:0;overflow-wrap:anywhere}
.tag strong{display:block}
.desc,.state{display:block;color:#57606a;font-size:.95rem}
form{margin:0}
button,.button{display:inline-flex;align-items:center;box-sizing:border-box;min-height:44px;padding:.5rem 1rem;border:2px solid var(--brand,#0a58ca);border-radius:.375rem;background:var(--brand,#0a58ca);color:#fff;font:inherit;text-decoration:none;cursor:pointer}
button.secondary{background:#fff;color:var(--brand,#0a58ca)}
.danger{background:#b02a37;border-color:#b02a37;color:#fff}
a{color:var(--brand,#0a58ca)}
.logo{display:block;max-height:4rem;max-width:min(100%,16rem);margin:.5rem 0 0}
select{font:inherit;min-height:44px;padding:.4rem .5rem;border:1px solid #57606a;border-radius:.375rem;background:#fff;color:#1f2328}
select:focus-visible{outline:3px solid #1f2328;outline-offset:2px}
input{font:inherit;min-height:44px;width:100%;max-width:24rem;box-sizing:border-box;padding:.4rem .5rem;border:1px solid #57606a;border-radius:.375rem}
button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid #1f2328;outline-offset:2px}
.notice{border-left:4px solid #1a7f37;background:#f0fff4;padding:.5rem .75rem}
.warning{border-left:4px solid #9a6700;background:#fff8c5;padding:.5rem .75rem}
nav ul{display:flex;flex-wrap:wrap;gap:.75rem;padding-top:1rem;border-top:1px solid #d0d7de;margin-top:2rem}
nav a{display:inline-block;min-height:44px;line-height:44px}
`;

const styleHash = (css: string) => `'sha256-${createHash("sha256").update(css).digest("base64")}'`;

/** The CSP source of the style sheet above. */
export const STYLE_HASH = styleHash(STYLE);

/** The account's colour (checked "#rrggbb", contrast with white ≥ 4.5:1): a second style sheet, allowed by its own hash. */
export function brandStyle(color: string): { css: string; hash: string } {
  const css = `:root{--brand:${color}}`;
  return { css, hash: styleHash(css) };
}

/** How an account dresses its pages (portal settings): "" for what it did not set. */
export interface Branding {
  /** An https URL; the page's CSP allows images from its origin. */
  logoUrl: string;
  /** "#rrggbb", checked for contrast when it was set. */
  brandColor: string;
}

export interface PageContext {
  locale: Locale;
  /** The page's own path (without query), for the language links. */
  path: string;
  /** How the account names itself to its subscribers (the portal setting `sender_name`); "" or unset: no name. */
  senderName?: string | undefined;
  /** The account's logo and colour, once the page knows whose it is. */
  branding?: Branding | undefined;
}

/** A tag's name and description in the page's language: its translation, else its own. */
export function localizedTag(tag: PortalTagView, locale: Locale): { name: string; description: string } {
  const translation = tag.translations[locale];
  return { name: translation?.name || tag.name, description: translation ? translation.description || tag.description : tag.description };
}

function t(locale: Locale, key: MessageKey, values?: Record<string, string>): string {
  return escapeHtml(message(CATALOGUES[locale], key, values));
}

function languageSwitcher(ctx: PageContext): string {
  const label = escapeHtml(CATALOGUES[ctx.locale].language_label);
  const links = LOCALES.map((locale) => {
    const name = escapeHtml((CATALOGUES[locale] as Messages).language_name);
    const current = locale === ctx.locale ? ' aria-current="true"' : "";
    return `<li><a href="${escapeHtml(ctx.path)}?lang=${locale}" lang="${locale}" hreflang="${locale}"${current}>${name}</a></li>`;
  }).join("");
  return `<nav aria-label="${label}"><ul>${links}</ul></nav>`;
}

function document(ctx: PageContext, title: string, body: string, withLanguages = true, referrer: "no-referrer" | "same-origin" = "no-referrer"): string {
  const brandColor = ctx.branding?.brandColor ?? "";
  // The logo is decoration beside the heading that names the sender: its
  // text alternative is the sender's name, else empty (it says nothing new).
  const logo = ctx.branding?.logoUrl
    ? `<img class="logo" src="${escapeHtml(ctx.branding.logoUrl)}" alt="${escapeHtml(ctx.senderName ?? "")}" referrerpolicy="no-referrer">`
    : "";
  return (
    `<!doctype html><html lang="${ctx.locale}"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="${referrer}">` +
    `<meta name="robots" content="noindex"><title>${title}</title><style>${STYLE}</style>${brandColor ? `<style>${brandStyle(brandColor).css}</style>` : ""}</head>` +
    `<body><main>${logo}<h1>${title}</h1>${body}${withLanguages ? languageSwitcher(ctx) : ""}</main></body></html>`
  );
}

/** A form posting to `action` with the page's form secret and language. */
function form(action: string, csrf: string, locale: Locale, button: string): string {
  return (
    `<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="csrf" value="${escapeHtml(csrf)}">` +
    `<input type="hidden" name="lang" value="${locale}">${button}</form>`
  );
}

export interface PreferencesPage {
  view: PreferencesView;
  /** Path of the session page, e.g. /preferences/s/<session>. */
  base: string;
  csrf: string;
  /** What the last action did, to confirm it. */
  done?: { key: "done_joined" | "done_left" | "done_unsubscribed_all" | "done_locale"; tag?: string } | undefined;
  /** Whether the export is offered. */
  canExport: boolean;
}

export function preferencesPage(ctx: PageContext, page: PreferencesPage): string {
  const { view, base, csrf, locale } = { ...page, locale: ctx.locale };
  const parts: string[] = [];
  if (page.done) parts.push(`<p class="notice" role="status">${t(locale, page.done.key, { tag: page.done.tag ?? "" })}</p>`);
  parts.push(`<p>${t(locale, "intro", { email: view.email })}</p>`);
  // Why no marketing mail reaches them, as the subscribers service says it.
  const blocked = view.mailability.marketing;
  if (blocked === MailingBlock.UNSUBSCRIBED) parts.push(`<p class="warning">${t(locale, "status_unsubscribed")}</p>`);
  if (blocked === MailingBlock.BOUNCED || blocked === MailingBlock.COMPLAINED) parts.push(`<p class="warning">${t(locale, "status_blocked")}</p>`);

  parts.push(`<section aria-labelledby="subscriptions"><h2 id="subscriptions">${t(locale, "subscriptions_heading")}</h2>`);
  if (view.availableTags.length === 0) {
    parts.push(`<p>${t(locale, "no_tags")}</p>`);
  } else {
    const held = new Set(view.subscribedTags.map((tag) => tag.id));
    // A held list of someone who gets no marketing mail (unsubscribed from
    // everything, bounced, complained) sends them nothing: never "Subscribed".
    // Who gets it is the subscribers service's answer, not this page's.
    const receiving = blocked === MailingBlock.UNSPECIFIED;
    parts.push('<ul class="tags">');
    for (const tag of view.availableTags) {
      const isHeld = held.has(tag.id);
      const shown = localizedTag(tag, locale);
      const name = escapeHtml(shown.name);
      const description = shown.description ? `<span class="desc">${escapeHtml(shown.description)}</span>` : "";
      const state = `<span class="state">${t(locale, isHeld ? (receiving ? "subscribed_state" : "paused_state") : "not_subscribed_state")}</span>`;
      const action = `${base}/tags/${encodeURIComponent(tag.id)}/${isHeld ? "unsubscribe" : "subscribe"}`;
      const label = t(locale, isHeld ? "unsubscribe_label" : "subscribe_label", { tag: shown.name });
      const button = `<button type="submit" class="${isHeld ? "secondary" : ""}" aria-label="${label}">${t(locale, isHeld ? "unsubscribe_button" : "subscribe_button")}</button>`;
      parts.push(`<li><span class="tag"><strong>${name}</strong>${description}${state}</span>${form(action, csrf, locale, button)}</li>`);
    }
    parts.push("</ul>");
  }
  parts.push("</section>");

  if (blocked === MailingBlock.UNSPECIFIED) {
    parts.push(
      `<section aria-labelledby="stop"><h2 id="stop">${t(locale, "unsubscribe_all_heading")}</h2><p>${t(locale, "unsubscribe_all_text")}</p>` +
        form(`${base}/unsubscribe-all`, csrf, locale, `<button type="submit" class="secondary">${t(locale, "unsubscribe_all_button")}</button>`) +
        "</section>",
    );
  }
  const options = LOCALES.map(
    (code) => `<option value="${code}" lang="${code}"${code === locale ? " selected" : ""}>${escapeHtml(CATALOGUES[code].language_name)}</option>`,
  ).join("");
  parts.push(
    `<section aria-labelledby="language"><h2 id="language">${t(locale, "locale_heading")}</h2><p id="language-hint">${t(locale, "locale_text")}</p>` +
      form(
        `${base}/locale`,
        csrf,
        locale,
        `<p><select id="locale" name="locale" aria-labelledby="language" aria-describedby="language-hint">${options}</select></p>` +
          `<button type="submit" class="secondary">${t(locale, "save_button")}</button>`,
      ) +
      "</section>",
  );
  parts.push(`<section aria-labelledby="data"><h2 id="data">${t(locale, "data_heading")}</h2>`);
  if (page.canExport) {
    parts.push(`<p>${t(locale, "export_text")}</p>` + form(`${base}/export`, csrf, locale, `<button type="submit" class="secondary">${t(locale, "export_button")}</button>`));
  }
  parts.push(
    `<h3>${t(locale, "delete_heading")}</h3><p>${t(locale, "delete_text")}</p>` +
      `<a class="button danger" href="${escapeHtml(base)}/delete?lang=${locale}">${t(locale, "delete_button")}</a></section>`,
  );
  const title = ctx.senderName ? t(locale, "page_title_sender", { sender: ctx.senderName }) : t(locale, "page_title");
  return document(ctx, title, parts.join(""));
}

export function confirmDeletePage(ctx: PageContext, base: string, csrf: string): string {
  const { locale } = ctx;
  const body =
    `<p>${t(locale, "confirm_text")}</p>` +
    form(`${base}/delete`, csrf, locale, `<button type="submit" class="danger">${t(locale, "confirm_button")}</button>`) +
    `<p><a href="${escapeHtml(base)}?lang=${locale}">${t(locale, "cancel_link")}</a></p>`;
  return document(ctx, t(locale, "confirm_title"), body);
}

export function deletedPage(ctx: PageContext): string {
  return document(ctx, t(ctx.locale, "deleted_title"), `<p>${t(ctx.locale, "deleted_text")}</p>`, false);
}

/**
 * Where a "send me a new link" form looks: the old link's token (`t`: signed
 * by us, its time up) or an account's id (`account`: the link on the
 * sender's own site). Either only says which account to look in; the
 * address entered says whom.
 */
export interface RenewWith {
  field: "t" | "account";
  value: string;
}

function newLinkForm(locale: Locale, renew: RenewWith, heading: boolean): string {
  return (
    `<section aria-labelledby="renew">${heading ? `<h2 id="renew">${t(locale, "new_link_heading")}</h2>` : ""}<p${heading ? "" : ' id="renew"'}>${t(locale, "new_link_text")}</p>` +
    `<form method="post" action="/preferences/new-link"><input type="hidden" name="${renew.field}" value="${escapeHtml(renew.value)}">` +
    `<input type="hidden" name="lang" value="${locale}"><p><label for="email">${t(locale, "email_label")}</label><br>` +
    `<input id="email" name="email" type="email" autocomplete="email" required maxlength="254"></p>` +
    `<button type="submit">${t(locale, "new_link_button")}</button></form></section>`
  );
}

/** "Get a new link" for an account: the page the sender links from their own site. */
export function linkRequestPage(ctx: PageContext, accountId: string): string {
  return document(ctx, t(ctx.locale, "new_link_heading"), newLinkForm(ctx.locale, { field: "account", value: accountId }, false));
}

/** A link that no longer works; with `renewWith`, the form that asks for a fresh one. */
export function invalidLinkPage(ctx: PageContext, reason: "expired" | "invalid" | "session_expired", renewWith?: RenewWith): string {
  const { locale } = ctx;
  let body =
    reason === "session_expired"
      ? `<p>${t(locale, "session_expired")}</p>`
      : `<p>${t(locale, reason === "expired" ? "invalid_expired" : "invalid_other")}</p><p>${t(locale, "invalid_hint")}</p>`;
  if (renewWith) body += newLinkForm(locale, renewWith, true);
  return document(ctx, t(locale, "invalid_title"), body);
}

/** The same answer whether or not the address is known. */
export function newLinkSentPage(ctx: PageContext): string {
  return document(ctx, t(ctx.locale, "new_link_sent_title"), `<p role="status">${t(ctx.locale, "new_link_sent_text")}</p>`);
}

/** A spent budget (new links asked for, or the subscriber's own requests): nothing was done; Retry-After says when to try again. */
export function tooManyRequestsPage(ctx: PageContext): string {
  return document(ctx, t(ctx.locale, "too_many_title"), `<p>${t(ctx.locale, "too_many_requests")}</p>`);
}

export function errorPage(ctx: PageContext): string {
  return document(ctx, t(ctx.locale, "invalid_title"), `<p>${t(ctx.locale, "error_text")}</p>`);
}

/**
 * A signup form posted without a proof of work: this page (on the portal's
 * own origin) carries the post's fields and a challenge; the solver script
 * (a file, never inline: the CSP allows scripts of this origin only) solves
 * it and posts the fields again. A client that runs no script gets no further.
 */
export function signupCheckPage(ctx: PageContext, action: string, fields: ReadonlyArray<[string, string]>, challengeJson: string, scriptPath: string): string {
  const { locale } = ctx;
  const hidden = fields.map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`).join("");
  const body =
    `<form method="post" action="${escapeHtml(action)}" data-emailsvc-challenge="${escapeHtml(challengeJson)}">${hidden}` +
    `<input type="hidden" name="pow" value=""><input type="hidden" name="lang" value="${locale}">` +
    `<p role="status">${t(locale, "signup_checking_text")}</p>` +
    `<noscript><p class="warning">${t(locale, "signup_noscript")}</p></noscript>` +
    `<button type="submit" hidden>${t(locale, "signup_continue")}</button></form>` +
    `<script src="${escapeHtml(scriptPath)}"></script>`;
  // same-origin: its re-post must carry the portal's Origin (under no-referrer a browser sends "null").
  return document(ctx, t(locale, "signup_checking_title"), body, false, "same-origin");
}

/** A signup taken (or a bot's, silently dropped: the same page). */
export function signupDonePage(ctx: PageContext): string {
  return document(ctx, t(ctx.locale, "signup_done_title"), `<p role="status">${t(ctx.locale, "signup_done_text")}</p>`, false);
}

/** A signup refused: a field to correct, a failed check, or a page that may not use the form. */
export function signupRefusedPage(ctx: PageContext, reason: "refused" | "forbidden"): string {
  return document(ctx, t(ctx.locale, "signup_refused_title"), `<p>${t(ctx.locale, reason === "forbidden" ? "signup_forbidden_text" : "signup_refused_text")}</p>`, false);
}

/**
 * A double opt-in confirmation link's page: a button, nothing done yet (a
 * mail scanner's GET confirms nothing). The form carries the link's token;
 * its POST confirms.
 */
export function confirmSubscriptionPage(ctx: PageContext, token: string): string {
  const { locale } = ctx;
  return document(
    ctx,
    t(locale, "optin_title"),
    `<p>${t(locale, "optin_text")}</p><form method="post" action="/confirm"><input type="hidden" name="token" value="${escapeHtml(token)}">` +
      `<input type="hidden" name="lang" value="${locale}"><button type="submit">${t(locale, "optin_button")}</button></form>`,
  );
}

/** After the POST: confirmed, or nothing done (the link was used, or the subscription moved on). */
export function subscriptionConfirmedPage(ctx: PageContext, outcome: "confirmed" | "not_pending"): string {
  const { locale } = ctx;
  return outcome === "confirmed"
    ? document(ctx, t(locale, "optin_done_title"), `<p role="status">${t(locale, "optin_done_text")}</p>`, false)
    : document(ctx, t(locale, "optin_used_title"), `<p role="status">${t(locale, "optin_used_text")}</p>`, false);
}

/** A confirmation link whose subscriber is gone (expired unconfirmed and erased), or whose token expired. */
export function confirmationExpiredPage(ctx: PageContext): string {
  return document(ctx, t(ctx.locale, "invalid_title"), `<p>${t(ctx.locale, "optin_gone_text")}</p>`);
}
