import { createClient, Code, ConnectError, type CallOptions, type Transport } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { delivery as deliveryProto, templates as templatesProto } from "@emailsvc/proto";

// Mail the platform sends on its own behalf, through its own send path
// (delivery's SendEmail in the tenant the call's headers name): the
// subscribers service's double-opt-in confirmations, the gateway's member
// invitations and password resets. The template is the platform's own, made
// in the account on its first use (an account may then edit it); one that
// exists is used as it is.

/** A template the platform makes in an account when it first mails with it. */
export interface PlatformTemplate {
  slug: string;
  name: string;
  subject: string;
  mjml: string;
}

export interface PlatformMailRequest {
  /** The platform's template, or the slug of one of the account's own. */
  template: PlatformTemplate | string;
  to: string;
  variables: JsonObject;
  /** Delivery's idempotency key: the same mail asked for twice is sent once. */
  idempotencyKey: string;
}

export interface PlatformMailer {
  /** Sends; a platform template the account lacks is made first. Errors are delivery's (ConnectError). */
  send(request: PlatformMailRequest, options: CallOptions): Promise<deliveryProto.SendEmailResponse>;
}

export function platformMailer(transports: { delivery: Transport; templates: Transport | undefined }): PlatformMailer {
  const delivery = createClient(deliveryProto.DeliveryService, transports.delivery);
  const templates = transports.templates ? createClient(templatesProto.TemplateService, transports.templates) : undefined;
  return {
    async send(request, options) {
      const platform = typeof request.template === "string" ? undefined : request.template;
      const send = () =>
        delivery.sendEmail(
          { templateSlug: platform ? platform.slug : (request.template as string), to: request.to, variables: request.variables, idempotencyKey: request.idempotencyKey },
          options,
        );
      try {
        return await send();
      } catch (err) {
        if (!platform || ConnectError.from(err).code !== Code.NotFound || !templates) throw err;
        // The account has no such platform template yet: make it (or find one made meanwhile), then send.
        await templates
          .createTemplate(
            { name: platform.name, slug: platform.slug, subject: platform.subject, mjmlContent: platform.mjml, category: templatesProto.TemplateCategory.TRANSACTIONAL },
            options,
          )
          .catch((createErr: unknown) => {
            if (ConnectError.from(createErr).code !== Code.AlreadyExists) throw createErr;
          });
        return send();
      }
    },
  };
}
