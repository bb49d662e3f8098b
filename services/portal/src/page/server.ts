import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { clientAddress } from "@emailsvc/ratelimit";
import { AppError, listen, urlHost, type Logger } from "@emailsvc/runtime";
import { sameSecret, signToken, tokenBoundSecret, TokenError, verifyToken, type KeyRing, type VerifiedToken } from "@emailsvc/tokens";
import {
  eraseAccount,
  getPreferences,
  subscribeTag,
  unsubscribeAll,
  unsubscribeTag,
  type PortalCall,
  type PortalDeps,
} from "../usecases/preferences.js";
import { confirmDeletePage, deletedPage, errorPage, invalidLinkPage, preferencesPage, STYLE_HASH, type PageContext } from "./html.js";
import { isLocale, pickLocale, type Locale } from "./messages/index.js";

// The portal page (`GET {PREFERENCES_URL}/preferences?token=…`). The link's
// token is traded at once for a short-lived page session in the path
// (a 303 to /preferences/s/<session>), so the long-lived token leaves the
// address bar, the history and any Referer. Every action is a form POST to
// the same origin carrying a secret bound to the session (no cookie: it works
// inside a cross-site iframe with third-party cookies blocked), then a 303
// back to the page (no resubmission on reload).

export interface PageServerOptions {
  deps: PortalDeps;
  keys: KeyRing;
  logger: Logger;
  port: number;
  host: string;
  /** CSP frame-ancestors: who may embed the page; default `*` (any site: the portal is meant for iframes). */
  frameAncestors?: string;
  /** Proxies in front whose X-Forwarded-For is trusted (TRUSTED_PROXY_HOPS). */
  trustedProxyHops?: number;
  /** How long a page session lasts (default 1 hour). */
  sessionTtlSeconds?: number;
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
  ) {
    super(reason);
  }
}

export async function startPageServer(options: PageServerOptions): Promise<RunningPageServer> {
  const { deps, keys, logger } = options;
  const sessionTtl = options.sessionTtlSeconds ?? 3600;
  const csp = [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    "form-action 'self'",
    "base-uri 'none'",
    `frame-ancestors ${options.frameAncestors ?? "*"}`,
  ].join("; ");

  function send(res: ServerResponse, status: number, html: string): void {
    res.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": csp,
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

  function portalCall(token: VerifiedToken, req: IncomingMessage): PortalCall {
    const forwarded = req.headers["x-forwarded-for"];
    return {
      call: { tenant: { accountId: token.accountId, mode: token.mode }, actor: "portal", requestId: "" },
      subscriberId: token.subscriberId!,
      client: {
        ip: clientAddress(req.socket.remoteAddress, Array.isArray(forwarded) ? forwarded.join(",") : forwarded, options.trustedProxyHops ?? 0),
        userAgent: String(req.headers["user-agent"] ?? "").slice(0, 512),
      },
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
    const ctx = (): PageContext => ({ locale, path: url.pathname });
    try {
      if (url.pathname === "/preferences" && req.method === "GET") {
        // The link from the mail: check it, then trade it for a page session.
        let token: VerifiedToken;
        try {
          token = verifyToken(keys, url.searchParams.get("token") ?? "", { purpose: "preferences" });
        } catch (err) {
          if (err instanceof TokenError) throw new PageError(403, err.reason === "expired" ? "expired" : "invalid");
          throw err;
        }
        if (!token.subscriberId) throw new PageError(403, "invalid");
        const sessionToken = signToken(
          keys,
          { purpose: "portal_session", accountId: token.accountId, mode: token.mode, subscriberId: token.subscriberId },
          { ttlSeconds: sessionTtl },
        );
        return redirect(res, `/preferences/s/${sessionToken}${isLocale(asked) ? `?lang=${asked}` : ""}`);
      }
      const match = SESSION_PATH.exec(url.pathname);
      if (!match) throw new PageError(404, "not_found");
      const raw = match[1]!;
      const action = match[2] ?? "";
      const token = session(raw);
      const base = `/preferences/s/${raw}`;
      const csrf = tokenBoundSecret(keys, raw, "csrf")!;
      const portal = portalCall(token, req);

      if (req.method === "GET" && action === "") {
        const view = await getPreferences(deps, portal);
        const done = url.searchParams.get("done");
        const tagId = url.searchParams.get("tag");
        const tagName = view.availableTags.find((tag) => tag.id === tagId)?.name;
        return send(
          res,
          200,
          preferencesPage(ctx(), {
            view,
            base,
            csrf,
            canExport: false,
            done:
              done === "joined" && tagName
                ? { key: "done_joined", tag: tagName }
                : done === "left" && tagName
                  ? { key: "done_left", tag: tagName }
                  : done === "unsubscribed_all"
                    ? { key: "done_unsubscribed_all" }
                    : undefined,
          }),
        );
      }
      if (req.method === "GET" && action === "/delete") return send(res, 200, confirmDeletePage(ctx(), base, csrf));
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
      if (action === "/unsubscribe-all") {
        await unsubscribeAll(deps, portal);
        return back("&done=unsubscribed_all");
      }
      if (action === "/delete") {
        await eraseAccount(deps, portal);
        return send(res, 200, deletedPage(ctx()));
      }
      throw new PageError(404, "not_found");
    } catch (err) {
      if (err instanceof PageError) {
        if (err.reason === "expired" || err.reason === "invalid" || err.reason === "session_expired") return send(res, err.status, invalidLinkPage(ctx(), err.reason));
        return send(res, err.status, errorPage(ctx()));
      }
      if (err instanceof AppError && err.kind === "unauthenticated") return send(res, 403, invalidLinkPage(ctx(), "invalid"));
      if (err instanceof AppError && err.kind === "not_found") return send(res, 404, errorPage(ctx()));
      logger.error({ err: err instanceof Error ? err.message : String(err) }, "portal page failed");
      return send(res, 500, errorPage(ctx()));
    }
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
