import type { GatewayRouterContext } from "../../http/state.js";
import { ONE_CLICK_FIELD, ONE_CLICK_VALUE } from "./schemas.js";

// The small pages a person sees after clicking an unsubscribe link: no
// script, no third-party request, no address or name of the subscriber (the
// page may be opened by whoever has the mail), readable on a phone. Texts are
// English for now; the preference portal brings message catalogues.

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

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex"><title>${title}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

function send(ctx: GatewayRouterContext, status: number, html: string): void {
  ctx.status = status;
  ctx.set(SECURITY_HEADERS);
  ctx.type = "text/html; charset=utf-8";
  ctx.body = html;
}

export function confirmPage(ctx: GatewayRouterContext): void {
  send(
    ctx,
    200,
    page(
      "Unsubscribe",
      `<h1>Unsubscribe</h1><p>Stop receiving these emails?</p>` +
        `<form method="post"><input type="hidden" name="${ONE_CLICK_FIELD}" value="${ONE_CLICK_VALUE}"><button type="submit">Unsubscribe</button></form>`,
    ),
  );
}

export function donePage(ctx: GatewayRouterContext): void {
  send(ctx, 200, page("Unsubscribed", `<h1>You are unsubscribed</h1><p>You will get no more of these emails.</p>`));
}

export function invalidLinkPage(ctx: GatewayRouterContext): void {
  send(
    ctx,
    401,
    page(
      "Link not valid",
      `<h1>This link is not valid</h1><p>It may have expired or been changed. Use the unsubscribe link of a more recent email, or reply to the sender.</p>`,
    ),
  );
}
