import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { Badge } from "../../kit";

export type Campaign = components["schemas"]["Campaign"];
export type CampaignStatus = Campaign["status"];

const TONES: Record<CampaignStatus, "good" | "bad" | "warn" | "neutral" | "info"> = {
  draft: "neutral",
  scheduled: "info",
  sending: "info",
  paused: "warn",
  sent: "good",
  cancelled: "neutral",
  failed: "bad",
};

/** A campaign's status in words (the list and the campaign's page). */
export function CampaignStatusBadge(props: { status: CampaignStatus }) {
  return <Badge tone={TONES[props.status]}>{t(`campaigns.status.${props.status}`)}</Badge>;
}
