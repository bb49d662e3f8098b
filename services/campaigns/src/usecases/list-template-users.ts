import type { CampaignStatus } from "../domain/campaign.js";
import type { Scope } from "./deps.js";

// Who uses a template, for the templates service to refuse deleting one in use
// (409 `template_in_use` naming them): a deleted template would leave a
// trigger whose every fire fails, and a campaign that can no longer start.

export interface TemplateUser {
  kind: "trigger" | "campaign";
  id: string;
  /** A campaign's status; a trigger's `active` or `inactive`. */
  state: string;
}

/** Campaigns that may still send their template. Sent, cancelled and failed ones are history. */
const LIVE_STATUSES: readonly CampaignStatus[] = ["draft", "scheduled", "sending", "paused"];
/** Users named in one answer (the total says how many there are). */
export const TEMPLATE_USERS_NAMED = 20;

/** Every trigger naming the template (active or not), then every campaign that may still send it; each kind oldest first. */
export async function listTemplateUsers(scope: Scope, templateId: string): Promise<{ users: TemplateUser[]; total: number }> {
  if (!templateId) return { users: [], total: 0 };
  const [triggers, campaigns, triggerCount, campaignCount] = await Promise.all([
    scope.triggers.find({ template_id: templateId }, { sort: { _id: 1 }, limit: TEMPLATE_USERS_NAMED }),
    scope.campaigns.find({ template_id: templateId, status: { $in: [...LIVE_STATUSES] } }, { sort: { _id: 1 }, limit: TEMPLATE_USERS_NAMED }),
    scope.triggers.count({ template_id: templateId }),
    scope.campaigns.count({ template_id: templateId, status: { $in: [...LIVE_STATUSES] } }),
  ]);
  const users: TemplateUser[] = [
    ...triggers.map((t) => ({ kind: "trigger" as const, id: t._id, state: t.is_active ? "active" : "inactive" })),
    ...campaigns.map((c) => ({ kind: "campaign" as const, id: c._id, state: c.status })),
  ];
  return { users: users.slice(0, TEMPLATE_USERS_NAMED), total: triggerCount + campaignCount };
}
