import { create, fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { AudienceFilter_Match, AudienceFilterSchema, campaigns, MetadataConditionSchema, type AudienceFilter } from "@emailsvc/proto";
import { rfc3339, rfc3339OrNull, stringOrNull } from "../../routes/json.js";
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

export function countsJson(counts: campaigns.RecipientCounts | undefined) {
  const by = counts?.skippedByReason;
  return {
    total: Number(counts?.total ?? 0n),
    pending: Number(counts?.pending ?? 0n),
    queued: Number(counts?.queued ?? 0n),
    sent: Number(counts?.sent ?? 0n),
    failed: Number(counts?.failed ?? 0n),
    skipped: Number(counts?.skipped ?? 0n),
    skipped_by_reason: {
      unsubscribed: Number(by?.unsubscribed ?? 0n),
      erased: Number(by?.erased ?? 0n),
      suppressed: Number(by?.suppressed ?? 0n),
      cancelled: Number(by?.cancelled ?? 0n),
    },
    snapshot_complete: counts?.snapshotComplete ?? false,
  };
}

export function campaignJson(c: campaigns.Campaign | undefined) {
  if (!c) throw new Error("the service returned no campaign");
  const counts = countsJson(c.counts);
  return {
    id: c.id,
    name: c.name,
    template_id: c.templateId,
    tag_filter: filterJson(c.tagFilter),
    status: STATUS[c.status],
    send_at: rfc3339OrNull(c.sendAt),
    started_at: rfc3339OrNull(c.startedAt),
    finished_at: rfc3339OrNull(c.finishedAt),
    failure_reason: stringOrNull(c.failureReason),
    template_version: c.templateVersion > 0 ? c.templateVersion : null,
    // The spec's send result; the audience is snapshotted once sending started.
    total_recipients: c.startedAt ? counts.total : null,
    counts,
    created_at: rfc3339(c.createdAt, "created_at"),
    updated_at: rfc3339(c.updatedAt, "updated_at"),
  };
}

