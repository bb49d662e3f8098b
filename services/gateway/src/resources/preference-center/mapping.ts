import { MailingBlock, type Mailability } from "@emailsvc/proto";

// Proto messages <-> the preference-center API's JSON. Only mapping here.

/** Why someone gets no mail of a category, as the API names it; null: they get it. */
export type MailingBlockJson = "unsubscribed" | "bounced" | "complained" | "suppressed" | "unconfirmed" | null;

const BLOCK_TO_JSON: Record<MailingBlock, MailingBlockJson> = {
  [MailingBlock.UNSPECIFIED]: null,
  [MailingBlock.UNSUBSCRIBED]: "unsubscribed",
  [MailingBlock.BOUNCED]: "bounced",
  [MailingBlock.COMPLAINED]: "complained",
  [MailingBlock.SUPPRESSED]: "suppressed",
  [MailingBlock.UNCONFIRMED]: "unconfirmed",
};

/** The subscribers service's answer to "who may be mailed", per category, as the portal passed it on. */
export function mailabilityJson(m: Mailability | undefined): { marketing: MailingBlockJson; transactional: MailingBlockJson } {
  if (!m) throw new Error("the portal returned no mailability");
  return { marketing: BLOCK_TO_JSON[m.marketing] ?? null, transactional: BLOCK_TO_JSON[m.transactional] ?? null };
}
