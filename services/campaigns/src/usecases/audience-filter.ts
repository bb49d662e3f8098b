import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { AudienceFilterSchema, type AudienceFilter } from "@emailsvc/proto";
import { invalid } from "@emailsvc/errors";
import type { CampaignDoc } from "../storage/documents.js";

// A campaign's audience filter is AudienceService's own message, kept as
// protobuf JSON with the .proto's field names, so the two never drift apart.

/** The filter as stored: protobuf JSON with the .proto's field names, defaults left out. */
export function storedFilter(filter: AudienceFilter): Record<string, unknown> {
  return toJson(AudienceFilterSchema, filter, { useProtoFieldName: true }) as Record<string, unknown>;
}

/** The stored filter as AudienceService takes it. */
export function filterOf(doc: Pick<CampaignDoc, "tag_filter">): AudienceFilter {
  return fromJson(AudienceFilterSchema, doc.tag_filter as JsonValue);
}

export function requireFilter(filter: AudienceFilter | undefined): AudienceFilter {
  if (!filter) throw invalid("tag_filter is required", [{ field: "tag_filter", description: "is required" }]);
  return filter;
}
