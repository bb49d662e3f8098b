import type { Locale } from "@emailsvc/text";
import { setProblemHeaders } from "../../http/errors.js";
import type { Problem } from "../../http/problem.js";
import type { GatewayContext } from "../../http/state.js";
import { message, type MessageKey } from "./messages.js";
import { ONE_CLICK_FIELD, ONE_CLICK_VALUE } from "./schemas.js";

// The small pages a person sees after clicking an unsubscribe link: no
// script, no third-party request, no address of the subscriber (the page may
// be opened by whoever has the mail), readable on a phone, in the
// subscriber's language (their stored locale, else Accept-Language), naming
// the sender when the account has a name for its subscribers.

const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:2rem 1rem;color:#1a1a1a;background:#fff}" +
  "main{max-width:32rem;margin:0 auto}h1{font-size:1.5rem}" +
  "button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:.3rem;background:#1f4fd1;color:#fff;cursor:pointer}" +
  "button:focus-visible{outline:3px solid #111;outline-offset:2px}";

// Nothing to load, nothing to run: the form posts to this very URL (same origin).
const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
};

/** Who the page speaks to and about. */
export interface PageVoice {
  locale: Locale;
  /** The account's name for its subscribers; "" when it has none. */
  sender: string;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A message as HTML text, with the sender's name, or its `anonymous` variant when the account has none. */
function say(voice: PageVoice, key: MessageKey, anonymous?: MessageKey): string {
  return escapeHtml(voice.sender === "" && anonymous ? message(voice.locale, anonymous) : message(voice.locale, key, voice.sender));
}

function page(voice: PageVoice, title: MessageKey, body: string): string {
  return (
    `<!doctype html><html lang="${voice.locale}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${say(voice, title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`
  );
}

function send(ctx: GatewayContext, status: number, html: string): void {
  ctx.status = status;
  ctx.set(SECURITY_HEADERS);
  ctx.type = "text/html; charset=utf-8";
  ctx.body = html;
}

export function confirmPage(ctx: GatewayContext, voice: PageVoice): void {
  send(
    ctx,
    200,
    page(
      voice,
      "confirm_title",
      `<h1>${say(voice, "confirm_heading", "confirm_heading_anonymous")}</h1><p>${say(voice, "confirm_text", "confirm_text_anonymous")}</p><p>${say(voice, "kept_text")}</p>` +
        `<form method="post"><input type="hidden" name="${ONE_CLICK_FIELD}" value="${ONE_CLICK_VALUE}"><button type="submit">${say(voice, "confirm_button")}</button></form>`,
    ),
  );
}

/** After the one-click POST: unsubscribed `now`, or `already` (by an earlier click or the portal, or erased): the page says which. */
export function donePage(ctx: GatewayContext, voice: PageVoice, when: "now" | "already"): void {
  const before = when === "already" ? `<p>${say(voice, "done_already_text")}</p>` : "";
  send(ctx, 200, page(voice, "done_title", `<h1>${say(voice, "done_heading")}</h1>${before}<p>${say(voice, "done_text", "done_text_anonymous")}</p><p>${say(voice, "kept_text")}</p>`));
}

/** Which page a problem is for the person who clicked (or whose mail program posted). */
function problemKind(problem: Problem): "link" | "request" | "busy" | "error" {
  const fields = (problem.extra.errors ?? []).map((e) => e.field);
  // The link itself: its token does not verify, or is missing or of no token's shape.
  if (problem.code === "invalid_link" || (problem.code === "validation_failed" && fields.includes("token"))) return "link";
  // A body that is not the one-click form: sending it again cannot help.
  if (problem.code === "unsupported_media_type" || problem.code === "payload_too_large" || (problem.code === "validation_failed" && fields.includes(ONE_CLICK_FIELD))) return "request";
  if (problem.code === "rate_limited") return "busy";
  return "error";
}

/**
 * A problem as the person who clicked the link should see it, nothing
 * changed in each case: a link that is malformed or whose token does not
 * verify is "not valid"; a body that is not the one-click form says what the
 * address takes (retrying the same cannot help); a spent budget asks to try
 * again in a few minutes (Retry-After says when); anything else (a service
 * down) is "something went wrong, try again". The status stays the
 * problem's; headers it carries (Retry-After, Connection: close of a 413)
 * are kept.
 */
export function problemPage(ctx: GatewayContext, problem: Problem, locale: Locale): void {
  const voice: PageVoice = { locale, sender: "" };
  setProblemHeaders(ctx, problem);
  const [title, heading, text] = PROBLEM_TEXTS[problemKind(problem)];
  send(ctx, problem.status, page(voice, title, `<h1>${say(voice, heading)}</h1><p>${say(voice, text)}</p>`));
}

const PROBLEM_TEXTS: Record<ReturnType<typeof problemKind>, [MessageKey, MessageKey, MessageKey]> = {
  link: ["invalid_title", "invalid_heading", "invalid_text"],
  request: ["request_title", "request_heading", "request_text"],
  busy: ["busy_title", "busy_heading", "busy_text"],
  error: ["error_title", "error_heading", "error_text"],
};
