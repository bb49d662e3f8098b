import { create, fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { AudienceFilter_Match, AudienceFilterSchema, campaigns, MetadataConditionSchema, type AudienceFilter } from "@emailsvc/proto";
import { rfc3339 } from "../../routes/json.js";
import type { TagFilterBody } from "./schemas.js";

// The REST API's JSON <-> proto Campaign and AudienceFilter.

type Scalar = string | number | boolean;

export interface TagFilterJson {
  include_tags: string[];
  match: "any" | "all";
  exclude_tags: string[];
  metadata: Array<{ key: string; equals: Scalar } | { key: string; in: Scalar[] } | { key: string; exists: boolean }>;
}

export function filterFromJson(body: TagFilterBody): AudienceFilter {
  return create(AudienceFilterSchema, {
    includeTags: body.include_tags ?? [],
    match: body.match === "all" ? AudienceFilter_Match.ALL : AudienceFilter_Match.ANY,
    excludeTags: body.exclude_tags ?? [],
    metadata: (body.metadata ?? []).map((condition) =>
      create(MetadataConditionSchema, {
        key: condition.key,
        condition:
          condition.exists !== undefined
            ? { case: "exists", value: condition.exists }
            : condition.in !== undefined
              ? { case: "in", value: { values: condition.in.map((v) => fromJson(ValueSchema, v)) } }
              : { case: "equals", value: fromJson(ValueSchema, condition.equals as Scalar) },
      }),
    ),
  });
}

export function filterJson(filter: AudienceFilter | undefined): TagFilterJson {
  return {
    include_tags: filter?.includeTags ?? [],
    match: filter?.match === AudienceFilter_Match.ALL ? "all" : "any",
    exclude_tags: filter?.excludeTags ?? [],
    metadata: (filter?.metadata ?? []).map(({ key, condition }) => {
      switch (condition.case) {
        case "exists":
          return { key, exists: condition.value };
        case "in":
          return { key, in: condition.value.values.map((v) => toJson(ValueSchema, v) as Scalar) };
        default:
          return { key, equals: (condition.value ? toJson(ValueSchema, condition.value) : "") as Scalar };
      }
    }),
  };
}

const STATUS: Record<campaigns.CampaignStatus, string> = {
  [campaigns.CampaignStatus.UNSPECIFIED]: "draft",
  [campaigns.CampaignStatus.DRAFT]: "draft",
  [campaigns.CampaignStatus.SCHEDULED]: "scheduled",
  [campaigns.CampaignStatus.SENDING]: "sending",
  [campaigns.CampaignStatus.PAUSED]: "paused",
  [campaigns.CampaignStatus.SENT]: "sent",
  [campaigns.CampaignStatus.CANCELLED]: "cancelled",
  [campaigns.CampaignStatus.FAILED]: "failed",
};

export function campaignJson(c: campaigns.Campaign | undefined) {
  if (!c) throw new Error("the service returned no campaign");
  const k = c.counts;
  const n = (value: bigint | undefined) => Number(value ?? 0n);
  const started = c.startedAt !== undefined;
  return {
    id: c.id,
    name: c.name,
    template_id: c.templateId,
    tag_filter: filterJson(c.tagFilter),
    status: STATUS[c.status],
    created_at: rfc3339(c.createdAt, "created_at"),
    updated_at: rfc3339(c.updatedAt, "updated_at"),
    send_at: c.sendAt ? rfc3339(c.sendAt, "send_at") : null,
    started_at: c.startedAt ? rfc3339(c.startedAt, "started_at") : null,
    finished_at: c.finishedAt ? rfc3339(c.finishedAt, "finished_at") : null,
    failure_reason: c.failureReason || null,
    template_version: c.templateVersion || null,
    total_recipients: started ? n(k?.total) : null,
    counts: {
      total: n(k?.total),
      pending: n(k?.pending),
      queued: n(k?.queued),
      sent: n(k?.sent),
      failed: n(k?.failed),
      skipped: n(k?.skipped),
      skipped_by_reason: {
        unsubscribed: n(k?.skippedByReason?.unsubscribed),
        erased: n(k?.skippedByReason?.erased),
        suppressed: n(k?.skippedByReason?.suppressed),
        cancelled: n(k?.skippedByReason?.cancelled),
      },
      snapshot_complete: k?.snapshotComplete ?? false,
    },
  };
}

