import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import { platformMailer } from "@emailsvc/grpc";
import type { Logger } from "@emailsvc/telemetry";
import { callHeaders, tenantOfKey } from "@emailsvc/tenancy";
import { confirmationWords, PLATFORM_CONFIRMATION_SLUG, PLATFORM_CONFIRMATION_TEMPLATE } from "../domain/confirmation-mail.js";
import type { ConfirmationMail, ConfirmationMailer } from "../usecases/ports.js";

/** Answers that mean "not this mail, ever": retrying changes nothing. */
const FINAL = new Set([Code.InvalidArgument, Code.NotFound, Code.FailedPrecondition, Code.PermissionDenied]);

/**
 * ConfirmationMailer over gRPC: delivery's SendEmail in the subscriber's
 * tenant, as `service:subscribers`, with the outbox entry's id as the
 * idempotency key. With no template of the account's, the platform's own
 * (slug `platform-double-opt-in`) is used, made in the account on its first
 * confirmation mail (@emailsvc/grpc platformMailer, which the gateway's
 * member mail uses too); its words go as variables in
 * the subscriber's language. Delivery mints `{{confirmation_url}}` itself.
 */
export function grpcConfirmationMailer(options: { delivery: Transport; templates: Transport | undefined; logger: Logger; timeoutMs?: number }): ConfirmationMailer {
  const mailer = platformMailer(options);
  const timeoutMs = options.timeoutMs ?? 5000;

  return {
    async send(mail: ConfirmationMail, signal?: AbortSignal) {
      const call = { headers: callHeaders({ tenant: tenantOfKey(mail.tenant), actor: "service:subscribers", requestId: mail.idempotencyKey }), timeoutMs, ...(signal ? { signal } : {}) };
      const template = mail.template === "" ? { slug: PLATFORM_CONFIRMATION_SLUG, ...PLATFORM_CONFIRMATION_TEMPLATE } : mail.template;
      try {
        const res = await mailer.send({ template, to: mail.email, variables: { ...confirmationWords(mail.locale) }, idempotencyKey: `confirmation:${mail.idempotencyKey}` }, call);
        if (res.refused) options.logger.warn({ tenant: mail.tenant }, "confirmation mail refused for its recipient; the subscriber stays pending until it expires");
        return res.refused ? "refused" : "sent";
      } catch (err) {
        const code = ConnectError.from(err).code;
        if (!FINAL.has(code)) throw err;
        options.logger.warn({ tenant: mail.tenant, template: mail.template || PLATFORM_CONFIRMATION_SLUG, code: Code[code] }, "confirmation mail not accepted by delivery; the subscriber stays pending until it expires");
        return "refused";
      }
    },
  };
}
