import type { IndexSpec } from "@emailsvc/storage";
import type { CampaignStatus } from "../domain/campaign.js";

// Stored shapes. Every document starts with `tenant` (account:mode) and every
// index starts with it too, so no query can reach across tenants.

export interface CampaignDoc {
  _id: string;
  tenant: string;
  name: string;
  template_id: string;
  /**
   * The audience filter as given, in protobuf JSON with the .proto's field
   * names (include_tags, match, exclude_tags, metadata): subscribers evaluates
   * it, this service only keeps it.
   */
  tag_filter: Record<string, unknown>;
  status: CampaignStatus;
  created_at: number;
  updated_at: number;
}

export const CAMPAIGN_INDEXES: readonly IndexSpec[] = [
  // Pages of campaigns in id (creation) order.
  { name: "list_by_id", fields: { tenant: 1, _id: 1 } },
];
