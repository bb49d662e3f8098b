import { AppError, invalid } from "@emailsvc/errors";

// What a campaign is, apart from storage and wire: its states, its name rule,
// and what may be done in which state.

export type CampaignStatus = "draft" | "scheduled" | "sending" | "paused" | "sent" | "cancelled" | "failed";

/** Where one recipient of a campaign stands (the ledger, campaign_recipients). */
export type RecipientState = "pending" | "queued" | "sent" | "failed" | "skipped";

/** Why a recipient was skipped. */
export type SkipReason = "unsubscribed" | "erased" | "suppressed" | "cancelled";
export const SKIP_REASONS: readonly SkipReason[] = ["unsubscribed", "erased", "suppressed", "cancelled"];

/**
 * The recipients of a campaign by state, kept on the campaign document and
 * moved with one `$inc` per change (from one bucket to another), so that they
 * add up to `total` whenever they are read. `pending` is what is left.
 */
export interface RecipientCounts {
  total: number;
  pending: number;
  queued: number;
  sent: number;
  failed: number;
  skipped: Record<SkipReason, number>;
}

export function emptyCounts(): RecipientCounts {
  return { total: 0, pending: 0, queued: 0, sent: 0, failed: 0, skipped: { unsubscribed: 0, erased: 0, suppressed: 0, cancelled: 0 } };
}

export interface CampaignView {
  id: string;
  name: string;
  templateId: string;
  /** The audience filter as AudienceService takes it, in protobuf JSON (field names as in the .proto). */
  tagFilter: Record<string, unknown>;
  status: CampaignStatus;
  createdAt: number;
  updatedAt: number;
  sendAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  failureReason: string;
  templateVersion: number;
  counts: RecipientCounts;
  snapshotComplete: boolean;
}

/** Statuses a campaign leaves only by an operator's action or never. */
export const FINISHED: readonly CampaignStatus[] = ["sent", "cancelled", "failed"];

/** The state changes an integrator asks for, and the states each may start from. */
export const TRANSITIONS = {
  pause: { from: ["sending"], to: "paused" },
  resume: { from: ["paused"], to: "sending" },
  cancel: { from: ["scheduled", "sending", "paused"], to: "cancelled" },
} as const satisfies Record<string, { from: readonly CampaignStatus[]; to: CampaignStatus }>;

export type Transition = keyof typeof TRANSITIONS;

/** A 409 naming the state the campaign is in and the states the change needs. */
export function stateConflict(status: CampaignStatus, action: Transition): AppError {
  const from = TRANSITIONS[action].from;
  return new AppError(
    "conflict",
    "campaign_state_conflict",
    `the campaign is ${status}; only a ${from.join(", ").replace(/, ([^,]*)$/, " or $1")} campaign can be ${action === "pause" ? "paused" : action === "resume" ? "resumed" : "cancelled"}`,
  );
}

export const NAME_MAX = 200;

/** 1-200 characters, not blank, no control characters (names show in lists and reports). */
export function validateName(name: unknown): string {
  if (typeof name !== "string" || name.trim().length === 0) throw invalid("name is required", [{ field: "name", description: "is required" }]);
  if ([...name].length > NAME_MAX) throw invalid(`name is longer than ${NAME_MAX} characters`, [{ field: "name", description: `is longer than ${NAME_MAX} characters` }]);
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    throw invalid("name holds control characters", [{ field: "name", description: "holds control characters" }]);
  }
  return name;
}

/** Only a draft may be changed or deleted: anything else is a 409 naming the state it is in. */
export function notDraft(status: CampaignStatus, action: "changed" | "deleted" | "sent"): AppError {
  return new AppError("conflict", "campaign_not_draft", `the campaign is ${status}; only a draft can be ${action}`);
}

export const templateNotFound = () => new AppError("not_found", "template_not_found", "template not found");
