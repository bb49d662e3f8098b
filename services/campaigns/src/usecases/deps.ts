import { create } from "@bufbuild/protobuf";
import { AudienceFilterSchema, type AudienceFilter } from "@emailsvc/proto";
import type { OutboxAfterWrite } from "@emailsvc/outbox";
import type { Policy } from "@emailsvc/ratelimit";
import { notFound } from "@emailsvc/errors";
import { type Logger } from "@emailsvc/telemetry";
import { tenantKey, tenantOfKey, type CallContext } from "@emailsvc/tenancy";
import { templateNotFound } from "../domain/campaign.js";
import type { CampaignDoc, TriggerDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import type { AudienceSource, TemplateDirectory } from "./ports.js";

/** How campaigns are sent (CAMPAIGN_* settings, see config.ts). */
export interface CampaignSettings {
  /** Each tenant's sending rate (messages per window); null: as fast as delivery takes them. */
  rate: Policy | null;
  /** Each tenant's messages per 24 h (a sliding window); null: no cap. */
  dailyLimit: number | null;
  /** A scheduled campaign found overdue by more than this (the platform was down) fails instead of sending late. */
  scheduleMaxAgeMs: number;
  /** Recipients of one campaign handed to delivery and not yet answered, at most. */
  maxInFlight: number;
  /** How long SendCampaign copies the audience before it answers (the dispatcher finishes a larger one). */
  snapshotBudgetMs: number;
  /**
   * TEST_MODE_DAILY_LIMIT: recipients an account's test-mode campaigns may be
   * handed to delivery in any 24 hours, a budget of the dispatcher's beside
   * the sending rate (a campaign over it waits); null or absent: no quota.
   */
  testModeDailyLimit?: number | null;
}

/** What every use case needs besides its tenant's collections; built once in server.ts. No collection here. */
export interface Deps {
  audiences: AudienceSource;
  templates: TemplateDirectory;
  logger: Logger;
  now: () => number;
  /** Publishes a campaign's outbox (campaign.status_changed) right after the write that filled it. */
  relay?: OutboxAfterWrite<CampaignDoc>;
  settings?: CampaignSettings;
  /** Tells the dispatcher there is work now (a campaign started or resumed). */
  wake?: () => void;
}

/** One call: its context and its tenant's collections. */
export interface Scope extends TenantRepositories {
  call: CallContext;
}

export function scopeOf(forTenant: (tenant: string) => TenantRepositories, call: CallContext): Scope {
  return { call, ...forTenant(tenantKey(call.tenant)) };
}

/** A page of a list, oldest first. */
export interface Page<T> {
  items: T[];
  nextCursor: string;
}

/** A campaign of the tenant, or 404. */
export async function loadCampaign(repos: Pick<TenantRepositories, "campaigns">, id: string): Promise<CampaignDoc> {
  const doc = id ? await repos.campaigns.findOne({ _id: id }) : null;
  if (!doc) throw notFound("campaign");
  return doc;
}

/** A trigger of the tenant, or 404. */
export async function loadTrigger(repos: Pick<TenantRepositories, "triggers">, id: string): Promise<TriggerDoc> {
  const doc = id ? await repos.triggers.findOne({ _id: id }) : null;
  if (!doc) throw notFound("trigger");
  return doc;
}

/** The context work on a campaign acts in when no request carries it (the dispatcher): its tenant, as the system. */
export function campaignCall(doc: Pick<CampaignDoc, "tenant" | "_id">): CallContext {
  return { tenant: tenantOfKey(doc.tenant), actor: `campaign:${doc._id}`, requestId: doc._id };
}

/**
 * Checks what a campaign or trigger names before it is stored: a template must
 * be a live template of the tenant (404 `template_not_found`); a filter, or a
 * tag (as the filter of its holders), must be one the subscribers service can
 * evaluate (its unknown tags are a 400 naming them). Parts not given are not checked.
 */
export async function checkReferences(
  deps: Deps,
  scope: Scope,
  refs: { templateId?: string | undefined; filter?: AudienceFilter | undefined; tag?: string },
): Promise<void> {
  const filter = refs.filter ?? (refs.tag ? create(AudienceFilterSchema, { includeTags: [refs.tag] }) : undefined);
  await Promise.all([
    refs.templateId === undefined ? undefined : requireTemplate(deps, scope, refs.templateId),
    filter === undefined ? undefined : deps.audiences.count(scope.call, filter),
  ]);
}

/** 404 `template_not_found` unless the template is a live template of the tenant. */
export async function requireTemplate(deps: Deps, scope: Scope, templateId: string): Promise<void> {
  if (!(await deps.templates.exists(scope.call, templateId))) throw templateNotFound();
}
