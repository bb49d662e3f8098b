import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { Badge } from "../../kit";

export type EmailStatus = components["schemas"]["EmailStatus"];
export const EMAIL_STATUSES: readonly EmailStatus[] = ["queued", "sent", "delivered", "deferred", "bounced", "complained", "failed", "suppressed"];

const TONES: Record<EmailStatus, "good" | "bad" | "warn" | "neutral" | "info"> = {
  queued: "info",
  sent: "good",
  delivered: "good",
  deferred: "warn",
  bounced: "bad",
  complained: "bad",
  failed: "bad",
  suppressed: "neutral",
};

/** An email's status in words (the log and the email's page). */
export function EmailStatusBadge(props: { status: EmailStatus }) {
  return <Badge tone={TONES[props.status]}>{t(`emails.status.${props.status}`)}</Badge>;
}
