import { AppError, invalid } from "@emailsvc/errors";
import { literalAddress, type AddressPolicy } from "./address-policy.js";
import { isWebhookEventType, WEBHOOK_EVENT_TYPE_NAMES, type WebhookEventType } from "@emailsvc/proto";

// What an endpoint may be. Checked by the service (the gateway's schema
// checks the shape): the URL's scheme and host, the event names.

export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 500;
export const MAX_EVENTS = 50;
/** Endpoints per tenant: each event is sent to every matching one, so their number bounds the fan-out. */
export const MAX_ENDPOINTS = 20;

export const tooManyEndpoints = () =>
  new AppError("conflict", "webhook_limit_reached", `an account (and mode) has at most ${MAX_ENDPOINTS} webhook endpoints; delete one first`);
/** The one entry of `events` that asks for every type, present and future. */
export const ALL_EVENTS = "*";

/** What the operator allows beyond public https URLs. */
export interface UrlRules {
  /** WEBHOOK_ALLOW_HTTP: plain http URLs (development, tests). */
  allowHttp: boolean;
  policy: AddressPolicy;
}

export const urlForbidden = (message: string) => new AppError("invalid", "webhook_url_forbidden", message, { fieldViolations: [{ field: "url", description: message }] });

/** The URL as stored (WHATWG-normalized), or a 400 naming what is wrong. */
export function checkUrl(rules: UrlRules, raw: string): string {
  const bad = (description: string) => invalid(`url ${description}`, [{ field: "url", description }]);
  if (raw.length === 0 || raw.length > MAX_URL_LENGTH) throw bad(`must be 1-${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad("is not an absolute URL");
  }
  if (url.protocol !== "https:" && !(rules.allowHttp && url.protocol === "http:")) {
    throw bad(rules.allowHttp ? "must be an https or http URL" : "must be an https URL");
  }
  if (url.username || url.password) throw bad("must not carry a user name or password (put a token in the path or query)");
  if (url.hash) throw bad("must not have a fragment");
  const address = literalAddress(url.hostname);
  if (address !== undefined && !rules.policy.allows(address)) {
    throw urlForbidden("url names a loopback, private, link-local or otherwise reserved address, which webhooks never call");
  }
  if (address === undefined && (url.hostname === "localhost" || url.hostname.endsWith(".localhost")) && !rules.policy.allows("127.0.0.1")) {
    throw urlForbidden("url names localhost, which webhooks never call");
  }
  return url.href;
}

/** The event list as stored: `["*"]`, or distinct known types; a 400 naming an unknown one. */
export function checkEvents(events: readonly string[]): string[] {
  if (events.length === 0) throw invalid("events must name at least one event type, or be [\"*\"]", [{ field: "events", description: "must not be empty" }]);
  if (events.length > MAX_EVENTS) throw invalid(`events takes at most ${MAX_EVENTS} entries`, [{ field: "events", description: `at most ${MAX_EVENTS}` }]);
  if (events.includes(ALL_EVENTS)) {
    if (events.length > 1) throw invalid(`events is either ["*"] or a list of types`, [{ field: "events", description: `"*" stands alone` }]);
    return [ALL_EVENTS];
  }
  const unknown = events.filter((name) => !isWebhookEventType(name));
  if (unknown.length > 0) {
    throw invalid(`unknown event type${unknown.length > 1 ? "s" : ""}: ${unknown.map((n) => JSON.stringify(n.slice(0, 100))).join(", ")}`, [
      { field: "events", description: `unknown: ${unknown.map((n) => n.slice(0, 100)).join(", ")}; known: ${WEBHOOK_EVENT_TYPE_NAMES.join(", ")}` },
    ]);
  }
  return [...new Set(events)];
}

export function checkDescription(description: string): string {
  if (description.length > MAX_DESCRIPTION_LENGTH) {
    throw invalid(`description is longer than ${MAX_DESCRIPTION_LENGTH} characters`, [{ field: "description", description: `at most ${MAX_DESCRIPTION_LENGTH} characters` }]);
  }
  return description;
}

/** Whether an endpoint asking for `events` gets an event of `type`. */
export function wants(events: readonly string[], type: WebhookEventType): boolean {
  return events.includes(ALL_EVENTS) || events.includes(type);
}
