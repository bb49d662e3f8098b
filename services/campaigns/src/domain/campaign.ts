import { AppError, invalid } from "@emailsvc/runtime";

// What a campaign is, apart from storage and wire: its states, its name rule,
// and what may be done in which state.

export type CampaignStatus = "draft" | "scheduled" | "sending" | "paused" | "sent" | "cancelled" | "failed";

export interface CampaignView {
  id: string;
  name: string;
  templateId: string;
  /** The audience filter as AudienceService takes it, in protobuf JSON (field names as in the .proto). */
  tagFilter: Record<string, unknown>;
  status: CampaignStatus;
  createdAt: number;
  updatedAt: number;
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
export function notDraft(status: CampaignStatus, action: "changed" | "deleted"): AppError {
  return new AppError("conflict", "campaign_not_draft", `the campaign is ${status}; only a draft can be ${action}`);
}

export const templateNotFound = () => new AppError("not_found", "template_not_found", "template not found");
