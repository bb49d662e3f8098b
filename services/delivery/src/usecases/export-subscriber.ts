import type { DeliveryExportPart } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import { isFinal } from "../domain/email.js";
import type { EmailDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";

// Delivery's part of a subscriber's data export (GDPR Art. 15): the emails
// linked to the subscriber, with what they were (template, subject as
// rendered) and what became of them. Only the subscriber's own emails: the
// query is by their id within the call's tenant.

/** Emails read per query (the erasure's index: tenant, subscriber_id, _id). */
const PAGE = 500;
/** Most emails one export takes; beyond, RESOURCE_EXHAUSTED (`export_too_large`). */
export const EXPORT_MAX_EMAILS = 20_000;

const time = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export async function exportSubscriberEmails(scope: Scope, subscriberId: string): Promise<string> {
  const emails: EmailDoc[] = [];
  // An id that is no subscriber's has no emails: `{"emails": []}`, as for an unknown one.
  if (subscriberId !== "") {
    let after = "";
    for (;;) {
      const page = await scope.emails.find({ subscriber_id: subscriberId, ...(after ? { _id: { $gt: after } } : {}) }, { sort: { _id: 1 }, limit: PAGE });
      emails.push(...page);
      if (emails.length > EXPORT_MAX_EMAILS) {
        throw new AppError("too_large", "export_too_large", `the subscriber has more than ${EXPORT_MAX_EMAILS} emails; ask the operator for an export`);
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!._id;
    }
  }
  // Emails sent before the subject was kept: the sandbox may still have the message.
  const missing = emails.filter((e) => e.subject === undefined && isFinal(e.status)).map((e) => e._id);
  const subjects = await scope.sandbox.subjects(missing);
  return JSON.stringify({
    emails: emails.map((e) => ({
      id: e._id,
      template_id: e.template_id,
      template_version: e.template_version,
      subject: e.subject ?? subjects.get(e._id) ?? null,
      status: e.status,
      created_at: time(e.queued_at),
      sent_at: time(e.sent_at),
      campaign_id: e.campaign_id || null,
    })),
  } satisfies DeliveryExportPart);
}
