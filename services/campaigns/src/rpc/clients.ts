import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AudienceService, delivery, SubscriberService, TagService, templates } from "@emailsvc/proto";
import { AppError, readError } from "@emailsvc/errors";
import { callHeaders, type CallContext } from "@emailsvc/tenancy";
import { DeferredSendError, PermanentSendError, type AudienceSource, type FiringServices, type TemplateDirectory } from "../usecases/ports.js";

// The services campaigns calls, with the caller's tenant in the headers (so
// another tenant's template or tag is simply unknown): the adapters of the
// use cases' ports (usecases/ports.ts).

const TIMEOUT_MS = 10_000;

function unavailable(service: string, err: unknown): AppError {
  const ce = ConnectError.from(err);
  return new AppError("unavailable", `${service}_unavailable`, `the ${service} service is unavailable (${Code[ce.code]}); try again`);
}

export function audienceClient(transport: Transport): AudienceSource {
  const client = createClient(AudienceService, transport);
  return {
    async page(call, filter, after, limit) {
      try {
        const res = await client.listAudience({ filter, afterSubscriberId: after, limit }, { headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
        return { ids: res.subscriberIds, nextAfter: res.nextAfter };
      } catch (err) {
        throw unavailable("subscribers", err);
      }
    },
    async count(call, filter) {
      try {
        const res = await client.countAudience({ filter }, { headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
        return Number(res.count);
      } catch (err) {
        // The caller's mistake, explained by the service that knows the tags:
        // passed on with its code, the fields named as the caller wrote them
        // (AudienceService's `filter` is a campaign's `tag_filter`).
        const info = readError(err);
        if (info.code === Code.InvalidArgument) {
          throw new AppError("invalid", info.errorCode, info.message, {
            fieldViolations: info.fieldViolations.map((v) => ({
              field: v.field.replace(/^filter(?=\.|$)/, "tag_filter"),
              description: v.description,
            })),
          });
        }
        throw unavailable("subscribers", err);
      }
    },
  };
}

export function templateDirectory(transport: Transport): TemplateDirectory {
  const client = createClient(templates.TemplateService, transport);
  const currentVersion = async (call: CallContext, templateId: string): Promise<number | undefined> => {
    try {
      const res = await client.getTemplate({ id: templateId }, { headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
      return res.template?.version;
    } catch (err) {
      const ce = ConnectError.from(err);
      if (ce.code === Code.NotFound || ce.code === Code.InvalidArgument) return undefined;
      throw unavailable("templates", err);
    }
  };
  return {
    currentVersion,
    async exists(call, templateId) {
      return (await currentVersion(call, templateId)) !== undefined;
    },
  };
}

export function firingServices(transports: { subscribers: Transport; templates: Transport; delivery: Transport }): FiringServices {
  const subscribers = createClient(SubscriberService, transports.subscribers);
  const tags = createClient(TagService, transports.subscribers);
  const templatesClient = createClient(templates.TemplateService, transports.templates);
  const deliveryClient = createClient(delivery.DeliveryService, transports.delivery);
  const options = (call: CallContext) => ({ headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
  const orUndefined = async <T>(run: () => Promise<T>, service: string): Promise<T | undefined> => {
    try {
      return await run();
    } catch (err) {
      const ce = ConnectError.from(err);
      if (ce.code === Code.NotFound) return undefined;
      throw unavailable(service, err);
    }
  };
  return {
    subscriber: (call, id) =>
      orUndefined(async () => {
        const s = (await subscribers.getSubscriber({ id }, options(call))).subscriber;
        return s ? { email: s.email } : undefined;
      }, "subscribers"),
    tagName: (call, id) => orUndefined(async () => (await tags.getTag({ id }, options(call))).tag?.name, "subscribers"),
    templateSlug: (call, id) => orUndefined(async () => (await templatesClient.getTemplate({ id }, options(call))).template?.slug, "templates"),
    async send(call, input) {
      try {
        const res = await deliveryClient.sendEmail(
          { templateSlug: input.templateSlug, to: input.to, idempotencyKey: input.idempotencyKey },
          options(call),
        );
        if (!res.email) throw unavailable("delivery", new ConnectError("no email in the answer", Code.Internal));
        // The reason as delivery's enum says it (never read from the email's error text).
        return { emailId: res.email.id, refused: res.refused ? res.email.failureReason : undefined };
      } catch (err) {
        if (err instanceof AppError) throw err;
        const info = readError(err);
        // FailedPrecondition: the account's state refuses this send for good (a template From on no verified sending domain).
        if (info.code === Code.InvalidArgument || info.code === Code.NotFound || info.code === Code.AlreadyExists || info.code === Code.FailedPrecondition) {
          throw new PermanentSendError(info.errorCode);
        }
        // A quota of the account's (test mode's messages a day): not an outage, and asking again
        // before its Retry-After would be refused again.
        if (info.code === Code.ResourceExhausted && info.retryAfterSeconds !== undefined) {
          throw new DeferredSendError(info.errorCode, info.retryAfterSeconds * 1000);
        }
        throw unavailable("delivery", err);
      }
    },
  };
}
