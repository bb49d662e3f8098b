import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AudienceService, DeliveryProblem as DeliveryProblemProto, MailingBlock, SuppressionService, type Mailability as MailabilityProto, type Recipient as RecipientProto } from "@emailsvc/proto";
import { callHeaders, tenantOfKey } from "@emailsvc/tenancy";
import {
  ADDRESSES_PER_CALL,
  RecipientsUnavailableError,
  type AddressAnswer,
  type AddressedRecipient,
  type DeliveryProblemSink,
  type Mailability,
  type MailingBlock as Block,
  type RecipientDirectory,
} from "../domain/recipients.js";

// RecipientDirectory over gRPC: AudienceService.GetRecipientByEmail,
// GetRecipientsByEmail and GetRecipients in the email's own tenant (`<account>:<mode>`), acting as the
// system. The subscribers service answers whether each recipient may be
// mailed; nothing here decides it.
export function subscribersDirectory(transport: Transport, options: { timeoutMs?: number } = {}): RecipientDirectory {
  const audience = createClient(AudienceService, transport);
  const timeoutMs = options.timeoutMs ?? 5000;
  const headersOf = (tenant: string) => {
    return callHeaders({ tenant: tenantOfKey(tenant), actor: "system", requestId: "" });
  };
  return {
    async byIds(tenant, ids, signal) {
      const found = new Map<string, AddressedRecipient>();
      if (ids.length === 0) return found;
      try {
        const res = await audience.getRecipients({ subscriberIds: [...ids] }, { headers: headersOf(tenant), timeoutMs, signal });
        for (const r of res.recipients) {
          found.set(r.subscriberId, { subscriberId: r.subscriberId, email: r.email, metadata: r.metadata ?? {}, mailability: mailabilityOf(r.mailability), locale: r.locale || undefined });
        }
        return found;
      } catch {
        throw new RecipientsUnavailableError();
      }
    },
    async lookupMany(tenant, emails, signal) {
      const answers = new Map<string, AddressAnswer>();
      for (let i = 0; i < emails.length; i += ADDRESSES_PER_CALL) {
        const chunk = emails.slice(i, i + ADDRESSES_PER_CALL);
        let res;
        try {
          res = await audience.getRecipientsByEmail({ emails: [...chunk] }, { headers: headersOf(tenant), timeoutMs, signal });
        } catch {
          throw new RecipientsUnavailableError();
        }
        if (res.answers.length !== chunk.length) throw new RecipientsUnavailableError();
        res.answers.forEach((answer, j) => answers.set(chunk[j]!, answerOf(answer.recipient, answer.mailability)));
      }
      return answers;
    },
    async lookup(tenant, email, signal) {
      try {
        const res = await audience.getRecipientByEmail({ email }, { headers: headersOf(tenant), timeoutMs, signal });
        return answerOf(res.recipient, res.mailability);
      } catch (err) {
        // An address the subscribers service would not store: nobody's, and never suppressed.
        if (ConnectError.from(err).code === Code.InvalidArgument) return { recipient: undefined, mailability: { marketing: undefined, transactional: undefined } };
        throw new RecipientsUnavailableError();
      }
    },
  };
}

/** One address's answer as delivery's domain reads it. */
function answerOf(r: RecipientProto | undefined, mailability: MailabilityProto | undefined): AddressAnswer {
  return {
    recipient: r?.subscriberId ? { subscriberId: r.subscriberId, metadata: r.metadata ?? {}, mailability: mailabilityOf(r.mailability), locale: r.locale || undefined } : undefined,
    mailability: mailabilityOf(mailability),
  };
}

const BLOCKS: Partial<Record<MailingBlock, Block>> = {
  [MailingBlock.UNSUBSCRIBED]: "unsubscribed",
  [MailingBlock.BOUNCED]: "bounced",
  [MailingBlock.COMPLAINED]: "complained",
  [MailingBlock.SUPPRESSED]: "suppressed",
};

/**
 * The answer as delivery's domain reads it. A block this build does not know
 * (a newer subscribers service) is refused as marketing mail is refused to a
 * suppressed address: better an email not sent than one sent against a rule.
 */
function mailabilityOf(m: MailabilityProto | undefined): Mailability {
  const block = (b: MailingBlock | undefined): Block | undefined =>
    b === undefined || b === MailingBlock.UNSPECIFIED ? undefined : (BLOCKS[b] ?? "suppressed");
  return { marketing: block(m?.marketing), transactional: block(m?.transactional) };
}

const PROBLEM_TO_PROTO = {
  hard_bounce: DeliveryProblemProto.HARD_BOUNCE,
  soft_bounce: DeliveryProblemProto.SOFT_BOUNCE,
  complaint: DeliveryProblemProto.COMPLAINT,
} as const;

/** DeliveryProblemSink over gRPC: SuppressionService.RecordDeliveryProblem in the email's tenant, as the system. */
export function subscribersProblemSink(transport: Transport, options: { timeoutMs?: number } = {}): DeliveryProblemSink {
  const suppressions = createClient(SuppressionService, transport);
  return {
    async record(tenant, report) {
      await suppressions.recordDeliveryProblem(
        { email: report.email, problem: PROBLEM_TO_PROTO[report.problem], emailId: report.emailId },
        { headers: callHeaders({ tenant: tenantOfKey(tenant), actor: "system", requestId: "" }), timeoutMs: options.timeoutMs ?? 5000 },
      );
    },
  };
}
