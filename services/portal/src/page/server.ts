import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createHash } from "node:crypto";
import { addressBucketId, clientAddress, MemoryCounterStore, type Policy } from "@emailsvc/ratelimit";
import { AppError } from "@emailsvc/errors";
import { listen, urlHost } from "@emailsvc/runtime";
import { type Logger } from "@emailsvc/telemetry";
import { type CallContext } from "@emailsvc/tenancy";
import { logoOrigin } from "../domain/branding.js";
import { frameAncestorsDirective } from "../domain/frame-ancestors.js";
import type { PageSettings } from "../usecases/settings.js";
import { sameSecret, signToken, tokenBoundSecret, TokenError, verifyToken, type KeyRing, type VerifiedToken } from "@emailsvc/tokens";
import {
  eraseAccount,
  getPreferences,
  subscribeTag,
  unsubscribeAll,
  unsubscribeTag,
  setLocale,
  type PortalCall,
  type PortalDeps,
} from "../usecases/preferences.js";
import { mailNewLink, type NewLinkDeps } from "../usecases/new-link.js";
import { exportData, type ExportDeps } from "../usecases/export.js";
import { retryAfterOf } from "../usecases/budgets.js";
import { confirmSubscription } from "../usecases/confirm.js";
import { SubscriberStatus } from "@emailsvc/proto";
import {
  confirmationExpiredPage,
  confirmSubscriptionPage,
  subscriptionConfirmedPage,
  confirmDeletePage,
  deletedPage,
  errorPage,
  invalidLinkPage,
  linkRequestPage,
  localizedTag,
  newLinkSentPage,
  preferencesPage,
  brandStyle,
  STYLE_HASH,
  tooManyRequestsPage,
  type Branding,
  type PageContext,
  type RenewWith,
} from "./html.js";
import { isLocale, pickLocale, type Locale } from "./messages/index.js";
import { signupFormHandler, type SignupPageOptions } from "./signup-form.js";

// The portal page (`GET {PREFERENCES_URL}/preferences?token=…`). The link's
// token is traded at once for a short-lived page session in the path
// (a 303 to /preferences/s/<session>), so the long-lived token leaves the
// address bar, the history and any Referer. Every action is a form POST to
// the same origin carrying a secret bound to the session (no cookie: it works
// inside a cross-site iframe with third-party cookies blocked), then a 303
// back to the page (no resubmission on reload).

export interface PageServerOptions {
  deps: PortalDeps;
  /** The export's sources ("download my data"). */
  exportDeps: ExportDeps;
  keys: KeyRing;
  logger: Logger;
  port: number;
  host: string;
  /** Each account's page settings: who may embed its pages (CSP frame-ancestors; the account's, else the platform's) and its sender name. */
  settings: { forTenant(call: CallContext): Promise<PageSettings> };
  /** Where no account is known yet (a broken link): default `*`. */
  defaultFrameAncestors?: readonly string[];
  /** Proxies in front whose X-Forwarded-For is trusted (TRUSTED_PROXY_HOPS). */
  trustedProxyHops?: number;
  /** How long a page session lasts (default 1 hour). */
  sessionTtlSeconds?: number;
  /**
   * Custom domains on: the page answers on PREFERENCES_URL's host and on the
   * active custom domains only (another Host is a 421), and on a custom domain
   * only for the account that owns it. Left out: any Host.
   */
  hosts?: { preferencesHost: string; accountOf(host: string): Promise<string | null> };
  /** "Send me a new link" on an expired link's page; left out, the page only explains. */
  newLink?: {
    deps: NewLinkDeps;
    /** Requests per client address, and per address asked for (PORTAL_LINK_REQUEST_RATE_IP, _ADDRESS). */
    perIp: Policy;
    perAddress: Policy;
  };
  /** Public signup forms (`/subscribe/…`, page/signup-form.ts); left out, none. */
  signup?: Omit<SignupPageOptions, "clientOf">;
}

export interface RunningPageServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

const SESSION_PATH = /^\/preferences\/s\/([A-Za-z0-9_.-]{1,2048})(\/.*)?$/;
const TAG_ACTION = /^\/tags\/(tag_[0-9a-z]{26})\/(subscribe|unsubscribe)$/;
const FORM_LIMIT_BYTES = 4096;

class PageError extends Error {
  constructor(
    readonly status: number,
    readonly reason: "expired" | "invalid" | "session_expired" | "bad_request" | "not_found",
    /** For an expired link: its token, with which a fresh one may be asked for. */
    readonly renewWith?: RenewWith,
  ) {
    super(reason);
  }
}

const ACCOUNT_ID = /^acc_[0-9a-hjkmnp-tv-z]{26}$/;

/** The Host header's name: lower case, without port or trailing dot ("" when absent or malformed). */
export function hostName(header: string | undefined): string {
  if (!header) return "";
  const value = header.trim().toLowerCase();
  const name = value.startsWith("[") ? value.slice(0, value.indexOf("]") + 1) : value.replace(/:[0-9]*$/, "");
  return /^[a-z0-9.\-\[\]:]{1,255}$/.test(name) ? name.replace(/\.$/, "").replace(/^\[|\]$/g, "") : "";
}

/** Longest address a new-link request may name (RFC 5321's path limit). */
const MAX_ADDRESS_LENGTH = 254;

export async function startPageServer(options: PageServerOptions): Promise<RunningPageServer> {
  const { deps, keys, logger } = options;
  const sessionTtl = options.sessionTtlSeconds ?? 3600;
  // New-link requests are counted in this process (a replica each: the budgets are per replica).
  const requestCounters = new MemoryCounterStore({ maxKeys: 100_000 });
  /** The pages' CSP: with an account's settings, its embedders, and its colour's style sheet and its logo's origin. */
  const cspOf = (account: Pick<PageSettings, "frameAncestors" | "logoUrl" | "brandColor">) =>
    [
      "default-src 'none'",
      `style-src ${STYLE_HASH}${account.brandColor ? ` ${brandStyle(account.brandColor).hash}` : ""}`,
      ...(account.logoUrl ? [`img-src ${logoOrigin(account.logoUrl)}`] : []),
      "form-action 'self'",
      "base-uri 'none'",
      `frame-ancestors ${frameAncestorsDirective(account.frameAncestors)}`,
    ].join("; ");
  const defaultCsp = cspOf({ frameAncestors: options.defaultFrameAncestors ?? ["*"], logoUrl: "", brandColor: "" });

  /** `account`: the settings of the account the page belongs to, when one is known. */
  function send(res: ServerResponse, status: number, html: string, account?: PageSettings): void {
    res.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": account ? cspOf(account) : defaultCsp,
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
    });
    res.end(html);
  }

  function redirect(res: ServerResponse, location: string): void {
    res.writeHead(303, { location, "referrer-policy": "no-referrer", "cache-control": "no-store", "content-length": "0" });
    res.end();
  }

  function session(raw: string): VerifiedToken {
    try {
      const token = verifyToken(keys, raw, { purpose: "portal_session" });
      if (!token.subscriberId) throw new TokenError("invalid_claims");
      return token;
    } catch (err) {
      if (err instanceof TokenError) throw new PageError(403, "session_expired");
      throw err;
    }
  }

  /** The subscriber's client, for the audit trail and the request budgets. */
  function clientOf(req: IncomingMessage): PortalCall["client"] {
    const forwarded = req.headers["x-forwarded-for"];
    return {
      ip: clientAddress(req.socket.remoteAddress, Array.isArray(forwarded) ? forwarded.join(",") : forwarded, options.trustedProxyHops ?? 0),
      userAgent: String(req.headers["user-agent"] ?? "").slice(0, 512),
    };
  }

  const signup = options.signup && signupFormHandler({ ...options.signup, clientOf });

  function portalCall(token: VerifiedToken, req: IncomingMessage): PortalCall {
    return {
      call: { tenant: { accountId: token.accountId, mode: token.mode }, actor: "portal", requestId: "" },
      subscriberId: token.subscriberId!,
      client: clientOf(req),
    };
  }

  async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") throw new PageError(415, "bad_request");
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > FORM_LIMIT_BYTES) throw new PageError(413, "bad_request");
      chunks.push(chunk);
    }
    return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://portal.invalid");
    const asked = url.searchParams.get("lang") ?? undefined;
    let locale: Locale = pickLocale(asked, undefined, req.headers["accept-language"]);
    // The account's sender name, once the page knows whose it is.
    let senderName = "";
    let branding: Branding | undefined;
    const ctx = (): PageContext => ({ locale, path: url.pathname, senderName, branding });
    try {
      // Which host this is: the platform's, or an account's custom domain (whose pages serve that account only).
      let hostAccount: string | undefined;
      if (options.hosts) {
        const host = hostName(req.headers.host);
        if (host !== options.hosts.preferencesHost) {
          const owner = host === "" ? null : await options.hosts.accountOf(host);
          if (!owner) return send(res, 421, errorPage(ctx()));
          hostAccount = owner;
        }
      }
      // Public signup forms: their own module.
      if (signup && url.pathname.startsWith("/subscribe/") && (await signup(req, res, url, ctx(), hostAccount))) return;
      const sameAccount = (accountId: string) => {
        if (hostAccount !== undefined && accountId !== hostAccount) throw new PageError(404, "not_found");
      };
      if (url.pathname === "/preferences" && req.method === "GET") {
        // The link from the mail: check it, then trade it for a page session.
        // No link, an account: "manage your subscription" on the sender's own site, where one asks for a link.
        const account = url.searchParams.get("account");
        if (account !== null && !url.searchParams.has("token") && options.newLink) {
          if (!ACCOUNT_ID.test(account)) throw new PageError(404, "not_found");
          sameAccount(account);
          return send(res, 200, linkRequestPage(ctx(), account));
        }
        let token: VerifiedToken;
        const raw = url.searchParams.get("token") ?? "";
        try {
          token = verifyToken(keys, raw, { purpose: "preferences" });
        } catch (err) {
          if (!(err instanceof TokenError)) throw err;
          if (err.reason === "expired") throw new PageError(403, "expired", options.newLink ? { field: "t", value: raw } : undefined);
          throw new PageError(403, "invalid");
        }
        if (!token.subscriberId) throw new PageError(403, "invalid");
        sameAccount(token.accountId);
        const sessionToken = signToken(
          keys,
          { purpose: "portal_session", accountId: token.accountId, mode: token.mode, subscriberId: token.subscriberId },
          { ttlSeconds: sessionTtl },
        );
        return redirect(res, `/preferences/s/${sessionToken}${isLocale(asked) ? `?lang=${asked}` : ""}`);
      }
      if (url.pathname === "/preferences/new-link" && req.method === "POST" && options.newLink) {
        return await newLinkRequest(req, res, options.newLink, hostAccount, (lang) => {
          if (isLocale(lang)) locale = lang;
          return ctx();
        });
      }
      if (url.pathname === "/confirm" && (req.method === "GET" || req.method === "POST")) {
        return await confirmation(req, res, url, sameAccount, (lang) => {
          if (isLocale(lang)) locale = lang;
          return ctx();
        }, (settings) => {
          senderName = settings.senderName;
          branding = settings;
        });
      }
      const match = SESSION_PATH.exec(url.pathname);
      if (!match) throw new PageError(404, "not_found");
      const raw = match[1]!;
      const action = match[2] ?? "";
      const token = session(raw);
      sameAccount(token.accountId);
      const base = `/preferences/s/${raw}`;
      const csrf = tokenBoundSecret(keys, raw, "csrf")!;
      const portal = portalCall(token, req);
      const settings = await options.settings.forTenant(portal.call);
      const embedders = settings;
      senderName = settings.senderName;
      branding = settings;

      if (req.method === "GET" && action === "") {
        const view = await getPreferences(deps, portal);
        // The language asked for, else the one the subscriber chose, else the browser's.
        locale = pickLocale(asked, view.locale, req.headers["accept-language"]);
        const done = url.searchParams.get("done");
        const tagId = url.searchParams.get("tag");
        const tag = view.availableTags.find((candidate) => candidate.id === tagId);
        const tagName = tag && localizedTag(tag, locale).name;
        return send(
          res,
          200,
          preferencesPage(ctx(), {
            view,
            base,
            csrf,
            canExport: true,
            done:
              done === "joined" && tagName
                ? { key: "done_joined", tag: tagName }
                : done === "left" && tagName
                  ? { key: "done_left", tag: tagName }
                  : done === "unsubscribed_all"
                    ? { key: "done_unsubscribed_all" }
                    : done === "locale"
                      ? { key: "done_locale" }
                      : undefined,
          }),
          embedders,
        );
      }
      if (req.method === "GET" && action === "/delete") return send(res, 200, confirmDeletePage(ctx(), base, csrf), embedders);
      if (req.method !== "POST") throw new PageError(404, "not_found");

      const form = await readForm(req);
      const lang = form.get("lang");
      if (isLocale(lang)) locale = lang;
      // The form secret proves the form came from this session's own page.
      if (!sameSecret(form.get("csrf") ?? "", csrf)) throw new PageError(403, "bad_request");
      const back = (query: string) => redirect(res, `${base}?lang=${locale}${query}`);
      const tagAction = TAG_ACTION.exec(action);
      if (tagAction) {
        const [, tagId, verb] = tagAction as unknown as [string, string, "subscribe" | "unsubscribe"];
        await (verb === "subscribe" ? subscribeTag(deps, portal, tagId) : unsubscribeTag(deps, portal, tagId));
        return back(`&done=${verb === "subscribe" ? "joined" : "left"}&tag=${tagId}`);
      }
      if (action === "/locale") {
        const chosen = form.get("locale");
        if (!isLocale(chosen)) throw new PageError(400, "bad_request");
        await setLocale(deps, portal, chosen);
        locale = chosen;
        return back("&done=locale");
      }
      if (action === "/export") {
        const json = await exportData(options.exportDeps, portal, { source: "portal", ip: portal.client.ip, userAgent: portal.client.userAgent });
        res.writeHead(200, {
          "content-type": "application/json; charset=utf-8",
          "content-disposition": 'attachment; filename="my-data.json"',
          "content-security-policy": "default-src 'none'; sandbox",
          "referrer-policy": "no-referrer",
          "x-content-type-options": "nosniff",
          "cache-control": "no-store",
        });
        res.end(json);
        return;
      }
      if (action === "/unsubscribe-all") {
        await unsubscribeAll(deps, portal);
        return back("&done=unsubscribed_all");
      }
      if (action === "/delete") {
        await eraseAccount(deps, portal);
        return send(res, 200, deletedPage(ctx()), embedders);
      }
      throw new PageError(404, "not_found");
    } catch (err) {
      if (err instanceof PageError) {
        if (err.reason === "expired" || err.reason === "invalid" || err.reason === "session_expired") {
          return send(res, err.status, invalidLinkPage(ctx(), err.reason, err.renewWith));
        }
        return send(res, err.status, errorPage(ctx()));
      }
      if (err instanceof AppError && err.kind === "unauthenticated") return send(res, 403, invalidLinkPage(ctx(), "invalid"));
      // The subscriber's budget of this kind of request is spent (the same one the API draws from): nothing was done.
      if (err instanceof AppError && err.kind === "rate_limited") {
        const retryAfter = retryAfterOf(err);
        if (retryAfter !== undefined) res.setHeader("retry-after", retryAfter);
        return send(res, 429, tooManyRequestsPage(ctx()));
      }
      if (err instanceof AppError && err.kind === "not_found") return send(res, 404, errorPage(ctx()));
      logger.error({ err: err instanceof Error ? err.message : String(err) }, "portal page failed");
      return send(res, 500, errorPage(ctx()));
    }
  }

  /**
   * A double opt-in confirmation link (`/confirm?token=…`, minted by delivery
   * for `{{confirmation_url}}`). GET shows a button and changes nothing, so
   * that a mail scanner or a link preview that fetches the link confirms
   * nobody; it says so at once when the link was used or has expired. The
   * button POSTs the token back (form-action 'self'), which confirms.
   */
  async function confirmation(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    sameAccount: (accountId: string) => void,
    context: (lang: string | null | undefined) => PageContext,
    setAccount: (settings: PageSettings) => void,
  ): Promise<void> {
    const form = req.method === "POST" ? await readForm(req) : undefined;
    const ctx = context(form?.get("lang"));
    const raw = (form ? form.get("token") : url.searchParams.get("token")) ?? "";
    let token: VerifiedToken;
    try {
      token = verifyToken(keys, raw, { purpose: "confirm" });
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
      if (err.reason === "expired") return send(res, 403, confirmationExpiredPage(ctx));
      throw new PageError(403, "invalid");
    }
    if (!token.subscriberId) throw new PageError(403, "invalid");
    sameAccount(token.accountId);
    const portal = portalCall(token, req);
    const settings = await options.settings.forTenant(portal.call);
    setAccount(settings);
    const page = context(form?.get("lang"));
    if (!form) {
      const current = await deps.subscribers.get(portal.call, portal.subscriberId);
      if (!current) return send(res, 403, confirmationExpiredPage(page), settings);
      if (current.status !== SubscriberStatus.PENDING) return send(res, 200, subscriptionConfirmedPage(page, "not_pending"), settings);
      return send(res, 200, confirmSubscriptionPage(page, raw), settings);
    }
    const outcome = await confirmSubscription(deps, portal);
    if (outcome === "gone") return send(res, 403, confirmationExpiredPage(page), settings);
    return send(res, 200, subscriptionConfirmedPage(page, outcome), settings);
  }

  /**
   * "Send me a new link": the old link (signed by us, its time up) says which
   * tenant to look in; the address says whom. Counted per client address and
   * per address asked for; answered alike whether the address is known or not,
   * before the lookup and the mail (which run on without the request).
   */
  async function newLinkRequest(
    req: IncomingMessage,
    res: ServerResponse,
    newLink: NonNullable<PageServerOptions["newLink"]>,
    hostAccount: string | undefined,
    context: (lang: string | null) => PageContext,
  ): Promise<void> {
    const form = await readForm(req);
    const ctx = context(form.get("lang"));
    // Which tenant to look in: the old link's (signed by us), or a live account named on the sender's site.
    let tenantOf: { accountId: string; mode: "live" | "test" };
    let renew: RenewWith;
    const account = form.get("account");
    if (account !== null) {
      if (!ACCOUNT_ID.test(account)) return send(res, 400, errorPage(ctx));
      tenantOf = { accountId: account, mode: "live" };
      renew = { field: "account", value: account };
    } else {
      try {
        const token = verifyToken(keys, form.get("t") ?? "", { purpose: "preferences", ignoreExpiry: true });
        tenantOf = { accountId: token.accountId, mode: token.mode };
        renew = { field: "t", value: form.get("t")! };
      } catch (err) {
        if (err instanceof TokenError) return send(res, 403, invalidLinkPage(ctx, "invalid"));
        throw err;
      }
    }
    // On a custom domain: its own account's subscribers only.
    if (hostAccount !== undefined && tenantOf.accountId !== hostAccount) return send(res, 404, errorPage(ctx));
    const email = (form.get("email") ?? "").trim();
    if (email === "" || email.length > MAX_ADDRESS_LENGTH || !email.includes("@")) {
      return send(res, 400, renew.field === "account" ? linkRequestPage(ctx, renew.value) : invalidLinkPage(ctx, "expired", renew));
    }
    const tenant = `${tenantOf.accountId}:${tenantOf.mode}`;
    const { ip } = clientOf(req);
    // Hashed keys: the counters hold no address.
    const addressKey = createHash("sha256").update(`${tenant}\n${email.toLowerCase()}`).digest("base64url").slice(0, 22);
    const outcome = await requestCounters.consume(
      [
        { key: `ip:${addressBucketId(ip)}`, policy: newLink.perIp },
        { key: `address:${addressKey}`, policy: newLink.perAddress },
      ],
      Date.now(),
    );
    if (!outcome.allowed) {
      res.setHeader("retry-after", String(Math.ceil(outcome.retryAfterMs / 1000)));
      return send(res, 429, tooManyRequestsPage(ctx));
    }
    const call = { tenant: tenantOf, actor: "portal", requestId: "" };
    void mailNewLink(newLink.deps, call, email);
    return send(res, 200, newLinkSentPage(ctx));
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error({ err: err instanceof Error ? err.message : String(err) }, "portal page failed");
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  const port = await listen(server, options.port, options.host);
  const url = `http://${urlHost(options.host)}:${port}`;
  logger.info({ url }, "portal page listening");
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive connections would hold the close open.
        server.closeIdleConnections();
      }),
  };
}
