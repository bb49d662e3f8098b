import { envInt, envOptional, type Env } from "@emailsvc/runtime";
import type { KeyRing } from "./keys.js";
import { signToken } from "./token.js";

// The link to a subscriber's preference page, minted in one place for the
// three that hand it out: the REST API (POST /subscribers/{id}/preference-token),
// delivery (`{{preference_center_url}}` in every message) and the portal page
// itself (a fresh link on request).

export interface PreferenceLinkSettings {
  /** PREFERENCES_URL: where subscribers reach the portal page, without a trailing slash. */
  baseUrl: string;
  /** PREFERENCE_TOKEN_TTL_SECONDS: how long a link works (default 7 days: links sit in mailboxes). */
  ttlSeconds: number;
}

export const DEFAULT_PREFERENCE_TOKEN_TTL_SECONDS = 7 * 24 * 3600;

/** From the environment; the page's default address follows PORTAL_PORT as `npm start` serves it. */
export function loadPreferenceLinkSettings(env: Env = process.env): PreferenceLinkSettings {
  const portalPort = envInt("PORTAL_PORT", 8081, { min: 0, max: 65535 }, env);
  const baseUrl = (envOptional("PREFERENCES_URL", env) ?? `http://localhost:${portalPort}`).replace(/\/+$/, "");
  return {
    baseUrl,
    ttlSeconds: envInt("PREFERENCE_TOKEN_TTL_SECONDS", DEFAULT_PREFERENCE_TOKEN_TTL_SECONDS, { min: 60, max: 90 * 24 * 3600 }, env),
  };
}

export interface PreferenceLink {
  token: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
  url: string;
}

/** A preference token for one subscriber of one tenant, and the page's URL with it. */
export function mintPreferenceLink(
  ring: KeyRing,
  subject: { accountId: string; mode: "live" | "test"; subscriberId: string },
  settings: PreferenceLinkSettings,
  now = Date.now(),
): PreferenceLink {
  const token = signToken(ring, { purpose: "preferences", ...subject }, { ttlSeconds: settings.ttlSeconds, now });
  return {
    token,
    expiresAt: (Math.floor(now / 1000) + settings.ttlSeconds) * 1000,
    url: `${settings.baseUrl}/preferences?token=${encodeURIComponent(token)}`,
  };
}

/**
 * How long a confirmation link (double opt-in) is signed for: the longest
 * confirmation window an account may set. The subscriber's own deadline is
 * the real bound: past it they are erased, and the link finds no one.
 */
export const CONFIRMATION_LINK_TTL_SECONDS = 90 * 24 * 3600;

/**
 * The link of a double opt-in confirmation mail (`{{confirmation_url}}`),
 * minted by delivery like `{{preference_center_url}}`: the portal's
 * `/confirm` page, which shows a button (GET confirms nothing, so a link
 * scanner does no harm) and confirms on its POST.
 */
export function mintConfirmationLink(
  ring: KeyRing,
  subject: { accountId: string; mode: "live" | "test"; subscriberId: string },
  baseUrl: string,
  now = Date.now(),
): PreferenceLink {
  const token = signToken(ring, { purpose: "confirm", ...subject }, { ttlSeconds: CONFIRMATION_LINK_TTL_SECONDS, now });
  return {
    token,
    expiresAt: (Math.floor(now / 1000) + CONFIRMATION_LINK_TTL_SECONDS) * 1000,
    url: `${baseUrl}/confirm?token=${encodeURIComponent(token)}`,
  };
}
