import type { ConnectRouter } from "@connectrpc/connect";
import { errorParts, invalid } from "@emailsvc/errors";
import { delivery } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import type { Deps, Scope } from "../usecases/deps.js";
import { getEmail, getSandboxMessage } from "../usecases/get-email.js";
import { listEmails } from "../usecases/list-emails.js";
import { countEmails } from "../usecases/count-emails.js";
import { sendEmail } from "../usecases/send-email.js";
import { MAX_BATCH_MESSAGES, sendEmails } from "../usecases/send-emails.js";
import { exportSubscriberEmails } from "../usecases/export-subscriber.js";
import { emailToProto, sandboxMessageToProto, statusFromProto, statusToProto } from "./mapping.js";
import type { NotificationOutcome } from "../usecases/take-provider-notification.js";

const OUTCOMES: Record<NotificationOutcome, delivery.ProviderNotificationOutcome> = {
  applied: delivery.ProviderNotificationOutcome.APPLIED,
  unchanged: delivery.ProviderNotificationOutcome.UNCHANGED,
  subscription_confirmed: delivery.ProviderNotificationOutcome.SUBSCRIPTION_CONFIRMED,
  ignored: delivery.ProviderNotificationOutcome.IGNORED,
};

/**
 * Registers DeliveryService: proto in, use case, proto out. `scopeOf` gives a
 * call its tenant's collections (the tenant of the call's headers).
 */
export function deliveryRoutes(
  deps: Deps,
  scopeOf: (call: CallContext) => Scope,
  takeSesNotification: (body: Uint8Array) => Promise<NotificationOutcome>,
): (router: ConnectRouter) => void {
  return (router) => {
    router.service(delivery.DeliveryService, {
      async sendEmail(req, ctx) {
        const result = await sendEmail(deps, scopeOf(readCallContext(ctx)), {
          templateSlug: req.templateSlug,
          to: req.to,
          variables: req.variables,
          idempotencyKey: req.idempotencyKey,
          fromEmail: req.fromEmail,
          fromName: req.fromName,
          replyTo: req.replyTo,
          signal: ctx.signal,
        });
        return { email: emailToProto(result.email), replayed: result.replayed, refused: result.refused };
      },
      async sendEmails(req, ctx) {
        if (req.messages.length > MAX_BATCH_MESSAGES) {
          throw invalid(`a batch holds at most ${MAX_BATCH_MESSAGES} messages`, [{ field: "messages", description: `at most ${MAX_BATCH_MESSAGES}` }]);
        }
        const outcomes = await sendEmails(deps, scopeOf(readCallContext(ctx)), req.messages.map((m) => ({ ...m, variables: m.variables })), ctx.signal);
        return {
          results: outcomes.map((outcome) => {
            if (!("error" in outcome)) {
              return { outcome: { case: "sent" as const, value: { email: emailToProto(outcome.email), replayed: outcome.replayed, refused: outcome.refused } } };
            }
            // As SendEmail would have failed for this message alone.
            const { code, message, detail, metadata } = errorParts(outcome.error);
            return { outcome: { case: "error" as const, value: { grpcCode: code, message, detail, metadata } } };
          }),
        };
      },
      async getEmail(req, ctx) {
        return { email: emailToProto(await getEmail(scopeOf(readCallContext(ctx)), req.id)) };
      },
      async listEmails(req, ctx) {
        const status = req.status === delivery.EmailStatus.UNSPECIFIED ? undefined : statusFromProto(req.status);
        const page = await listEmails(scopeOf(readCallContext(ctx)), { limit: req.limit, cursor: req.cursor, status, campaignId: req.campaignId || undefined, subscriberId: req.subscriberId || undefined });
        return { emails: page.items.map(emailToProto), nextCursor: page.nextCursor };
      },
      async countEmails(req, ctx) {
        if (!req.since) throw invalid("since is required", [{ field: "since", description: "is required" }]);
        const counts = await countEmails(scopeOf(readCallContext(ctx)), Number(req.since.seconds) * 1000 + Math.floor(req.since.nanos / 1e6));
        return { counts: counts.map(({ status, count }) => ({ status: statusToProto(status), count: BigInt(count) })) };
      },
      async getSandboxMessage(req, ctx) {
        return { message: sandboxMessageToProto(await getSandboxMessage(scopeOf(readCallContext(ctx)), req.emailId)) };
      },
      async exportSubscriberData(req, ctx) {
        return { json: await exportSubscriberEmails(scopeOf(readCallContext(ctx)), req.subscriberId) };
      },
      // No tenant: the provider's signature authenticates it, and the email it names gives the tenant.
      async takeProviderNotification(req) {
        if (req.provider !== "ses") throw invalid("provider must be ses", [{ field: "provider", description: "must be ses" }]);
        return { outcome: OUTCOMES[await takeSesNotification(req.body)] };
      },
    });
  };
}
