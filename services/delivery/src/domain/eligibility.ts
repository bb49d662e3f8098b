import type { IgnorableSuppression, TemplateCategory } from "./renderer.js";
import type { Mailability, MailingBlock } from "./recipients.js";
import type { PublicErrorCode } from "./provider.js";

// Whether delivery may send an email to its recipient: the subscribers
// service's answer (who may get which category of mail, its table in
// services/subscribers/src/domain/mailability.ts) applied to the email's
// category. The one place delivery does so, for SendEmail, every send attempt
// and a campaign's intake alike. Pure.

/** The categories of mail the answer distinguishes. */
export type MailCategory = "marketing" | "transactional";

/**
 * The category an email is judged by: campaign mail is bulk mail, marketing
 * whatever its template says; otherwise the template's (one without a
 * category, as stored before categories existed, counts as transactional).
 */
export function mailCategory(template: TemplateCategory, campaign: boolean): MailCategory {
  return campaign || template === "marketing" ? "marketing" : "transactional";
}

/** Why an email is not sent to its recipient: the public codes of a refusal. */
export type RefusalCode = Extract<
  PublicErrorCode,
  "recipient_unsubscribed" | "recipient_bounced" | "recipient_complained" | "recipient_suppressed" | "recipient_erased"
>;

const REFUSAL_OF: Record<MailingBlock, RefusalCode> = {
  unsubscribed: "recipient_unsubscribed",
  bounced: "recipient_bounced",
  complained: "recipient_complained",
  suppressed: "recipient_suppressed",
};

/** The block each ignorable suppression reason stands for in the answer. */
const BLOCK_OF_IGNORED: Record<IgnorableSuppression, MailingBlock> = { hard_bounce: "bounced", complaint: "complained" };

/**
 * Why the email may not go to its recipient, or undefined when it may.
 * `answer`: the recipient's mailability; `erased`: the subscriber the email
 * was addressed to (a campaign's recipient, by id) exists no more; `unknown`:
 * nobody can tell (no subscribers service configured), so it goes.
 * `ignored`: the template's `ignore_suppressions`, which lift a bounced or
 * complained block of transactional mail only (marketing mail never ignores it).
 */
export function refusal(
  category: MailCategory,
  answer: Mailability | "erased" | "unknown",
  ignored: readonly IgnorableSuppression[] = [],
): RefusalCode | undefined {
  if (answer === "unknown") return undefined;
  if (answer === "erased") return "recipient_erased";
  const block = answer[category];
  if (!block) return undefined;
  if (category === "transactional" && ignored.some((reason) => BLOCK_OF_IGNORED[reason] === block)) return undefined;
  return REFUSAL_OF[block];
}
