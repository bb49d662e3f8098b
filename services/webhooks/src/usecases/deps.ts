import { notFound } from "@emailsvc/errors";
import type { Logger } from "@emailsvc/telemetry";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import type { KeyRing } from "@emailsvc/tokens";
import type { UrlRules } from "../domain/endpoint.js";
import type { RetrySettings } from "../domain/retry.js";
import type { EndpointDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";

/** What every use case needs besides its tenant's collections; built once in server.ts. No collection here. */
export interface Deps {
  /** SEALING_KEYS: endpoints' secrets are sealed under it. */
  sealingKeys: KeyRing;
  urlRules: UrlRules;
  retry: RetrySettings;
  /** An endpoint whose every attempt failed for this long is turned off (WEBHOOK_DISABLE_AFTER_SECONDS). */
  disableAfterMs: number;
  /** How long the secret before a rotation keeps signing beside the new one (24 h). */
  secretOverlapMs: number;
  logger: Logger;
  now: () => number;
  /** Tells the sender there is work now. */
  wake?: () => void;
}

/** The purpose endpoints' secrets are sealed for. */
export const SECRET_PURPOSE = "webhook-secret";

/** One call: its context and its tenant's collections. */
export interface Scope extends TenantRepositories {
  call: CallContext;
}

export function scopeOf(forTenant: (tenant: string) => TenantRepositories, call: CallContext): Scope {
  return { call, ...forTenant(tenantKey(call.tenant)) };
}

export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** An endpoint of the tenant, or 404. */
export async function loadEndpoint(repos: Pick<TenantRepositories, "endpoints">, id: string): Promise<EndpointDoc> {
  const doc = id ? await repos.endpoints.findOne({ _id: id }) : null;
  if (!doc) throw notFound("webhook");
  return doc;
}

/** An endpoint as the API shows it: never its secret. */
export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  description: string;
  isActive: boolean;
  disabledReason: string;
  disabledAt: number;
  createdAt: number;
  updatedAt: number;
  /** 0 when no previous secret signs any more. */
  previousSecretExpiresAt: number;
}

export function webhookView(doc: EndpointDoc, now: number): WebhookView {
  return {
    id: doc._id,
    url: doc.url,
    events: doc.events,
    description: doc.description,
    isActive: doc.is_active,
    disabledReason: doc.disabled_reason,
    disabledAt: doc.disabled_at,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
    previousSecretExpiresAt: doc.previous_secret_sealed && doc.previous_secret_expires_at > now ? doc.previous_secret_expires_at : 0,
  };
}
