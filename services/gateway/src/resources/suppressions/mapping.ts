import { SuppressionReason, type Suppression } from "@emailsvc/proto";
import { rfc3339, stringOrNull } from "../../routes/json.js";
import { SUPPRESSION_REASONS } from "./schemas.js";

// Proto suppressions <-> the REST API's JSON.

type ReasonJson = (typeof SUPPRESSION_REASONS)[number];

const REASON_TO_JSON: Partial<Record<SuppressionReason, ReasonJson>> = {
  [SuppressionReason.HARD_BOUNCE]: "hard_bounce",
  [SuppressionReason.COMPLAINT]: "complaint",
  [SuppressionReason.UNSUBSCRIBED]: "unsubscribed",
  [SuppressionReason.MANUAL]: "manual",
  [SuppressionReason.ERASED]: "erased",
};

export function reasonFromJson(reason: string | undefined): SuppressionReason {
  if (reason === undefined) return SuppressionReason.UNSPECIFIED;
  const found = Object.entries(REASON_TO_JSON).find(([, json]) => json === reason);
  return found ? (Number(found[0]) as SuppressionReason) : SuppressionReason.UNSPECIFIED;
}

export interface SuppressionJson {
  id: string;
  email: string | null;
  reason: ReasonJson;
  source: string;
  email_id: string | null;
  created_at: string;
}

export function suppressionJson(s: Suppression | undefined): SuppressionJson {
  if (!s) throw new Error("the service returned no suppression");
  const reason = REASON_TO_JSON[s.reason];
  if (!reason) throw new Error(`the service returned suppression reason ${s.reason}`);
  return { id: s.id, email: stringOrNull(s.email), reason, source: s.source, email_id: stringOrNull(s.emailId), created_at: rfc3339(s.createdAt, "created_at") };
}
