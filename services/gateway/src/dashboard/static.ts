import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Middleware } from "koa";
import type { Logger } from "@emailsvc/telemetry";
import type { GatewayState } from "../http/state.js";

// The dashboard (dashboard/, built to static files) on the API's origin, so
// that its calls to /api/v1 are same-origin and its session cookie is never
// sent anywhere else. The files are read into memory once at start (some
// hundreds of KiB), with the Brotli and gzip forms the build wrote beside
// each (dashboard/build.mjs: compressed there, not at every start), and
// served with:
// - a strict CSP: scripts from this origin only (no inline script, no
//   eval), nothing from any other origin except the images of a mail's
//   preview; inline styles are allowed because a mail's preview (a sandboxed
//   srcdoc frame, which inherits this policy) is made of them;
// - framing refused (frame-ancestors 'none' and X-Frame-Options), no
//   referrer, no MIME sniffing, a browsing context of its own;
// - hashed asset names cached for a year, index.html never cached (every
//   path of the app answers it, so a deploy is picked up at the next load).

export const DASHBOARD_PATH = "/dashboard";

export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy": DASHBOARD_CSP,
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
};

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
};

interface StaticFile {
  type: string;
  body: Buffer;
  br: Buffer;
  gzip: Buffer;
  etag: string;
  immutable: boolean;
}

/** The built dashboard's directory (dashboard/dist, from the @emailsvc/dashboard package); undefined when it was not built. */
export function dashboardDistDir(): string | undefined {
  try {
    const dir = join(dirname(require.resolve("@emailsvc/dashboard/package.json")), "dist");
    return existsSync(join(dir, "index.html")) ? dir : undefined;
  } catch {
    return undefined;
  }
}

function load(dir: string): Map<string, StaticFile> {
  const build = JSON.parse(readFileSync(join(dir, "build.json"), "utf8")) as { files: string[] };
  const files = new Map<string, StaticFile>();
  for (const name of ["index.html", "favicon.svg", ...build.files]) {
    const body = readFileSync(join(dir, name));
    const ext = name.slice(name.lastIndexOf("."));
    files.set(name, {
      type: TYPES[ext] ?? "application/octet-stream",
      body,
      br: readFileSync(join(dir, `${name}.br`)),
      gzip: readFileSync(join(dir, `${name}.gz`)),
      etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
      immutable: name.startsWith("assets/"),
    });
  }
  return files;
}

/**
 * Serves GET/HEAD /dashboard/* (and redirects / and /dashboard there).
 * Without a built dashboard, its paths answer 404 and a warning says why.
 */
export function serveDashboard(logger: Logger, dir: string | undefined = dashboardDistDir()): Middleware<GatewayState> {
  const files = dir ? load(dir) : undefined;
  if (!files) logger.warn("the dashboard is not built (dashboard/dist): /dashboard answers 404; run `npm run build`");
  return async (ctx, next) => {
    const path = ctx.path;
    if (path !== "/" && path !== DASHBOARD_PATH && !path.startsWith(`${DASHBOARD_PATH}/`)) return next();
    if (ctx.method !== "GET" && ctx.method !== "HEAD") return next();
    if (!files) return next();
    if (path === "/" || path === DASHBOARD_PATH) {
      ctx.status = 302;
      ctx.redirect(`${DASHBOARD_PATH}/`);
      return;
    }
    const name = path.slice(DASHBOARD_PATH.length + 1);
    let file = files.get(name);
    if (!file) {
      // An asset that is not there is a 404 (an old tab after a deploy reloads), under the
      // same headers as every /dashboard answer; any other path is a page of the app.
      if (name.startsWith("assets/") || /\.[a-z0-9]+$/i.test(name)) {
        ctx.set(SECURITY_HEADERS);
        return next();
      }
      file = files.get("index.html")!;
    }
    ctx.set(SECURITY_HEADERS);
    ctx.set("Cache-Control", file.immutable ? "public, max-age=31536000, immutable" : "no-cache");
    ctx.set("ETag", file.etag);
    ctx.set("Vary", "Accept-Encoding");
    ctx.type = file.type;
    if (ctx.get("if-none-match") === file.etag) {
      ctx.status = 304;
      return;
    }
    const accepts = ctx.get("accept-encoding");
    ctx.status = 200;
    if (/\bbr\b/.test(accepts)) {
      ctx.set("Content-Encoding", "br");
      ctx.body = file.br;
    } else if (/\bgzip\b/.test(accepts)) {
      ctx.set("Content-Encoding", "gzip");
      ctx.body = file.gzip;
    } else {
      ctx.body = file.body;
    }
  };
}
