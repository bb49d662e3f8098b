import { emptyCounts, type CampaignView } from "../domain/campaign.js";
import type { TriggerView } from "../domain/trigger.js";
import type { CampaignDoc, TriggerDoc } from "../storage/documents.js";

// Stored documents as the use cases answer them (rpc/ maps these to proto).

export function campaignView(doc: CampaignDoc): CampaignView {
  return {
    id: doc._id,
    name: doc.name,
    templateId: doc.template_id,
    tagFilter: doc.tag_filter,
    status: doc.status,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
    sendAt: doc.send_at ?? null,
    startedAt: doc.started_at ?? null,
    finishedAt: doc.finished_at ?? null,
    failureReason: doc.failure_reason ?? "",
    templateVersion: doc.template_version ?? 0,
    counts: doc.counts ?? emptyCounts(),
    snapshotComplete: doc.snapshot_complete ?? false,
  };
}

export function triggerView(doc: TriggerDoc): TriggerView {
  return {
    id: doc._id,
    eventType: doc.event_type,
    templateId: doc.template_id,
    description: doc.description,
    isActive: doc.is_active,
    delaySeconds: doc.delay_seconds,
    tag: doc.tag,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
    disabledReason: doc.disabled_reason ?? "",
    lastFailureReason: doc.last_failure_reason ?? "",
    lastFailureAt: doc.last_failure_at ?? null,
  };
}
