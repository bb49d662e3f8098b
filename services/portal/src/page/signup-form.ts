import type { IncomingMessage, ServerResponse } from "node:http";
import { frameAncestorsDirective } from "../domain/frame-ancestors.js";
import { POW_FIELD, postOrigin, type SignupFormView, type SignupRefusal } from "../domain/signup-form.js";
import { chargeClient, issueChallenge, submitSignup, type PublicForms, type SignupDeps, type SignupOutcome } from "../usecases/sign-up.js";
import { signupCheckPage, signupDonePage, signupRefusedPage, STYLE_HASH, tooManyRequestsPage, errorPage, type PageContext } from "./html.js";
import { SIGNUP_SCRIPT, SIGNUP_SCRIPT_ETAG } from "./signup-script.js";

// The public signup endpoint on the portal's page server:
//   POST /subscribe/{form_id}            a post from a form on an account's site
//   GET  /subscribe/{form_id}/challenge  a proof-of-work challenge (JSON, CORS for the form's origins)
//   GET  /subscribe/{form_id}/done       "check your inbox", where an accepted post lands without a success_url
//   GET  /subscribe/signup.js            the solver script
// A browser posting the plain form gets 303s (to the form's redirects, or
// these pages); a client asking for JSON (`Accept: application/json`) gets
// JSON and problem+json, with CORS headers for the form's allowed origins.

const FORM_PATH = /^\/subscribe\/(frm_[0-9a-hjkmnp-tv-z]{26})(\/challenge|\/done)?$/;
export const SIGNUP_SCRIPT_PATH = "/subscribe/signup.js";
const FORM_LIMIT_BYTES = 8192;

const STATUS: Record<SignupRefusal, number> = {
  invalid_email: 400,
  missing_field: 400,
  invalid_field: 400,
  origin_not_allowed: 403,
  proof_of_work_required: 400,
  proof_of_work_failed: 403,
  rate_limited: 429,
  form_not_found: 404,
  unavailable: 503,
};

const DETAIL: Record<SignupRefusal, string> = {
  invalid_email: "The email address is not valid.",
  missing_field: "A required field is empty.",
  invalid_field: "A field's value is not valid.",
  origin_not_allowed: "This form may not be posted from this origin.",
  proof_of_work_required: "The post carries no proof of work: fetch a challenge from /subscribe/{form_id}/challenge, solve it and post the solution in `pow`.",
  proof_of_work_failed: "The proof of work is wrong, expired, for another form or used before.",
  rate_limited: "Too many signups; try again later.",
  form_not_found: "There is no such form.",
  unavailable: "The signup could not be taken now; try again in a moment.",
};

export interface SignupPageOptions {
  deps: SignupDeps;
  forms: PublicForms;
  /** The client's address as the audit trail and the budgets see it (TRUSTED_PROXY_HOPS). */
  clientOf(req: IncomingMessage): { ip: string; userAgent: string };
}

class BodyError extends Error {
  constructor(readonly status: 413 | 415) {
    super("bad body");
  }
}

async function readPost(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw new BodyError(415);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > FORM_LIMIT_BYTES) throw new BodyError(413);
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/**
 * Answers a request under /subscribe; false when the path is not one of
 * ours. `hostAccount`: on an account's custom domain, only that account's forms.
 */
export function signupFormHandler(options: SignupPageOptions) {
  const { deps, forms } = options;

  return async function handleSignup(req: IncomingMessage, res: ServerResponse, url: URL, ctx: PageContext, hostAccount: string | undefined): Promise<boolean> {
    if (url.pathname === SIGNUP_SCRIPT_PATH && req.method === "GET") {
      res.writeHead(200, {
        "content-type": "text/javascript; charset=utf-8",
        "cache-control": "public, max-age=3600",
        etag: SIGNUP_SCRIPT_ETAG,
        "x-content-type-options": "nosniff",
        // An account's page loads it from here.
        "cross-origin-resource-policy": "cross-origin",
      });
      res.end(SIGNUP_SCRIPT);
      return true;
    }
    const match = FORM_PATH.exec(url.pathname);
    if (!match) return false;
    const formId = match[1]!;
    const sub = match[2] ?? "";
    const wantsJson = /\bapplication\/json\b/.test(String(req.headers.accept ?? ""));
    const requestOrigin = typeof req.headers.origin === "string" ? req.headers.origin : undefined;

    if (sub === "/done" && req.method === "GET") {
      sendPage(res, 200, signupDonePage(ctx), undefined);
      return true;
    }

    /** The CORS headers for a fetch from one of the form's origins. */
    const cors = (form: SignupFormView | undefined): Record<string, string> =>
      form && requestOrigin && form.allowedOrigins.includes(requestOrigin) ? { "access-control-allow-origin": requestOrigin, vary: "Origin" } : { vary: "Origin" };

    const refuse = (outcome: Extract<SignupOutcome, { kind: "refused" }>, form: SignupFormView | undefined) => {
      const headers: Record<string, string> = { ...cors(form) };
      if (outcome.retryAfterSeconds !== undefined) headers["retry-after"] = String(Math.max(1, outcome.retryAfterSeconds));
      if (wantsJson) {
        const status = STATUS[outcome.refusal];
        const problem = {
          type: `urn:emailsvc:problem:${outcome.refusal}`,
          title: outcome.refusal.replace(/_/g, " "),
          status,
          code: outcome.refusal,
          detail: DETAIL[outcome.refusal],
          ...(outcome.field ? { errors: [{ field: outcome.field, code: outcome.refusal }] } : {}),
        };
        res.writeHead(status, { ...headers, "content-type": "application/problem+json", "cache-control": "no-store" });
        res.end(JSON.stringify(problem));
        return;
      }
      // The form's error page, told why; a post from a page that may not use the form never goes there.
      if (form && form.errorUrl !== "" && outcome.refusal !== "origin_not_allowed") {
        const target = new URL(form.errorUrl);
        target.searchParams.set("error", outcome.refusal);
        if (outcome.field) target.searchParams.set("field", outcome.field);
        redirect(res, target.toString(), headers);
        return;
      }
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      const status = STATUS[outcome.refusal];
      const page =
        outcome.refusal === "rate_limited"
          ? tooManyRequestsPage(ctx)
          : outcome.refusal === "unavailable"
            ? errorPage(ctx)
            : signupRefusedPage(ctx, outcome.refusal === "origin_not_allowed" ? "forbidden" : "refused");
      sendPage(res, status, page, form);
    };

    const isPreflight = req.method === "OPTIONS";
    if (!isPreflight && !((sub === "" && req.method === "POST") || (sub === "/challenge" && req.method === "GET"))) return false;

    // The client's budget before anything else, the form's lookup included.
    const client = options.clientOf(req);
    const spent = await chargeClient(deps, client.ip);
    if (spent?.kind === "refused") {
      refuse(spent, undefined);
      return true;
    }
    // Preflight of a fetch that sends more than a simple request does.
    if (isPreflight) {
      const found = await forms.find(formId);
      const allowed = found && requestOrigin && found.form.allowedOrigins.includes(requestOrigin);
      res.writeHead(204, {
        ...(allowed ? { "access-control-allow-origin": requestOrigin, "access-control-allow-methods": "GET, POST", "access-control-allow-headers": "content-type, accept", "access-control-max-age": "600" } : {}),
        vary: "Origin",
      });
      res.end();
      return true;
    }
    const found = await forms.find(formId);
    if (!found || (hostAccount !== undefined && found.tenant.accountId !== hostAccount)) {
      refuse({ kind: "refused", refusal: "form_not_found" }, undefined);
      return true;
    }
    const { form } = found;

    // Only the form's own sites, and the portal's check page, may post it. A
    // challenge may be fetched by anyone (it grants nothing); CORS lets only
    // the form's sites read it.
    if (sub === "/challenge") {
      res.writeHead(200, { ...cors(form), "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify(issueChallenge(deps, form)));
      return true;
    }
    const origin = postOrigin(requestOrigin, typeof req.headers.referer === "string" ? req.headers.referer : undefined);
    if (origin === undefined || (!form.allowedOrigins.includes(origin) && !sameHost(origin, req.headers.host))) {
      refuse({ kind: "refused", refusal: "origin_not_allowed" }, form);
      return true;
    }
    let post: URLSearchParams;
    try {
      post = await readPost(req);
    } catch (err) {
      if (!(err instanceof BodyError)) throw err;
      refuse({ kind: "refused", refusal: "invalid_field" }, form);
      return true;
    }
    const outcome = await submitSignup(deps, found, post, client);
    if (outcome.kind === "refused") {
      refuse(outcome, form);
      return true;
    }
    if (outcome.kind === "needs_proof_of_work") {
      if (wantsJson) {
        refuse({ kind: "refused", refusal: "proof_of_work_required", field: POW_FIELD }, form);
        return true;
      }
      // The page that does the work in the person's browser, then posts the same fields again.
      const fields = [...post.entries()].filter(([name]) => name !== POW_FIELD && name !== "lang");
      sendPage(res, 200, signupCheckPage(ctx, url.pathname, fields, JSON.stringify(outcome.challenge), SIGNUP_SCRIPT_PATH), form, true);
      return true;
    }
    if (wantsJson) {
      res.writeHead(200, { ...cors(form), "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify({ status: "accepted" }));
      return true;
    }
    redirect(res, form.successUrl !== "" ? form.successUrl : `/subscribe/${form.id}/done?lang=${ctx.locale}`, cors(form));
    return true;
  };
}

/** Whether `origin` is the portal's own (its check page re-posting): the host the request came to, whatever scheme a proxy in front ended. */
function sameHost(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}

function redirect(res: ServerResponse, location: string, headers: Record<string, string>): void {
  res.writeHead(303, { ...headers, location, "referrer-policy": "no-referrer", "cache-control": "no-store", "content-length": "0" });
  res.end();
}

/**
 * A page of the signup flow. Its CSP lets forms post to the portal and the
 * form's redirects only (browsers hold a form's redirect to form-action),
 * and scripts of the portal's own origin only on the check page.
 */
function sendPage(res: ServerResponse, status: number, html: string, form: SignupFormView | undefined, withScript = false): void {
  // The check page's re-post must carry its Origin: under no-referrer a browser sends "null".
  const redirects = form ? [form.successUrl, form.errorUrl].map(originOf).filter((o): o is string => o !== undefined) : [];
  const csp = [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    ...(withScript ? ["script-src 'self'"] : []),
    `form-action 'self'${redirects.map((o) => ` ${o}`).join("")}`,
    "base-uri 'none'",
    `frame-ancestors ${frameAncestorsDirective(["'self'"])}`,
  ].join("; ");
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": csp,
    "referrer-policy": withScript ? "same-origin" : "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
  });
  res.end(html);
}
