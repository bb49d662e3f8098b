import type { AudienceFilter } from "@emailsvc/proto";
import { filterOf, requireFilter } from "./audience-filter.js";
import { loadCampaign, type Deps, type Scope } from "./deps.js";

/** Active subscribers a stored campaign's filter, or a filter given, reaches now. */
export async function countRecipients(
  deps: Deps,
  scope: Scope,
  target: { campaignId: string } | { tagFilter: AudienceFilter | undefined },
): Promise<number> {
  const filter = "campaignId" in target ? filterOf(await loadCampaign(scope, target.campaignId)) : requireFilter(target.tagFilter);
  return deps.audiences.count(scope.call, filter);
}
