import type { ConnectRouter } from "@connectrpc/connect";
import { AudienceService, SubscriberService, SuppressionService, TagService } from "@emailsvc/proto";
import type { AuditContext } from "@emailsvc/proto";
import { readCallContext, type CallContext } from "@emailsvc/tenancy";
import type { HandlerContext } from "@connectrpc/connect";
import { validateAudit } from "../domain/audit.js";
import { createSubscriber } from "../usecases/create-subscriber.js";
import { signUp } from "../usecases/sign-up.js";
import { confirmSubscriber } from "../usecases/confirm-subscriber.js";
import { getAudienceSettings, updateAudienceSettings } from "../usecases/audience-settings.js";
import { deleteSubscriber } from "../usecases/delete-subscriber.js";
import { exportSubscriberData } from "../usecases/export-subscriber.js";
import { countAudience, getRecipients, listAudience } from "../usecases/audience.js";
import type { Deps, Scope } from "../usecases/deps.js";
import { getSubscriber, getSubscriberByEmail } from "../usecases/get-subscriber.js";
import { getRecipientByEmail, getRecipientsByEmail } from "../usecases/get-recipient-by-email.js";
import { listSubscriberEvents } from "../usecases/list-subscriber-events.js";
import { listSubscribers } from "../usecases/list-subscribers.js";
import { addTags, removeTag } from "../usecases/subscriber-tags.js";
import { createTag, deleteTag, getTag, listTags, updateTag } from "../usecases/tags.js";
import { updateSubscriber } from "../usecases/update-subscriber.js";
import { unsubscribeAll } from "../usecases/unsubscribe-all.js";
import { listSuppressions } from "../usecases/list-suppressions.js";
import { addSuppression } from "../usecases/add-suppression.js";
import { removeSuppression } from "../usecases/remove-suppression.js";
import { recordDeliveryProblem } from "../usecases/record-delivery-problem.js";
import {
  audienceFilterFromProto,
  auditToProto,
  audienceSettingsToProto,
  mailabilityToProto,
  recipientToProto,
  statusFromProto,
  subscriberToProto,
  deliveryProblemFromProto,
  suppressionReasonFromProto,
  suppressionToProto,
  tagToProto,
  unsubscribeAllOutcomeToProto,
} from "./mapping.js";

/**
 * Registers SubscriberService, TagService, AudienceService and SuppressionService: proto in, use case, proto out.
 * `scopeOf` gives a call its tenant's collections (the tenant of the call's headers).
 */
export function subscriberRoutes(deps: Deps, scopeOf: (call: CallContext) => Scope): (router: ConnectRouter) => void {
  /** The call's scope with how its request came (a change's audit record carries it). */
  const audited = (ctx: HandlerContext, audit: AuditContext | undefined): Scope => ({ ...scopeOf(readCallContext(ctx)), origin: validateAudit(audit) });
  return (router) => {
    router.service(SubscriberService, {
      async createSubscriber(req, ctx) {
        const view = await createSubscriber(deps, audited(ctx, req.audit), {
          email: req.email,
          tags: req.tags,
          metadata: req.metadata,
          status: statusFromProto(req.status),
          locale: req.locale,
          resubscribe: req.resubscribe,
          resubscribeReason: req.resubscribeReason,
          consent: req.consent,
          doubleOptIn: req.doubleOptIn,
        });
        return { subscriber: subscriberToProto(view) };
      },
      async signUp(req, ctx) {
        await signUp(deps, audited(ctx, req.audit), {
          email: req.email,
          tags: req.tags,
          metadata: req.metadata,
          locale: req.locale,
          consent: req.consent,
        });
        return {};
      },
      async confirmSubscriber(req, ctx) {
        return { subscriber: subscriberToProto(await confirmSubscriber(deps, audited(ctx, req.audit), req.subscriberId)) };
      },
      async getAudienceSettings(_req, ctx) {
        return { settings: audienceSettingsToProto(await getAudienceSettings(scopeOf(readCallContext(ctx)))) };
      },
      async updateAudienceSettings(req, ctx) {
        const settings = await updateAudienceSettings(deps, scopeOf(readCallContext(ctx)), {
          doubleOptIn: req.doubleOptIn,
          doubleOptInForApi: req.doubleOptInForApi,
          confirmationExpirySeconds: req.confirmationExpirySeconds,
          confirmationTemplate: req.confirmationTemplate,
        });
        return { settings: audienceSettingsToProto(settings) };
      },
      async getSubscriber(req, ctx) {
        return { subscriber: subscriberToProto(await getSubscriber(scopeOf(readCallContext(ctx)), req.id)) };
      },
      async getSubscriberByEmail(req, ctx) {
        return { subscriber: subscriberToProto(await getSubscriberByEmail(scopeOf(readCallContext(ctx)), req.email)) };
      },
      async listSubscribers(req, ctx) {
        const page = await listSubscribers(scopeOf(readCallContext(ctx)), {
          limit: req.limit,
          status: statusFromProto(req.status),
          cursor: req.cursor,
          emailPrefix: req.emailPrefix,
          tag: req.tag,
        });
        return { subscribers: page.items.map(subscriberToProto), nextCursor: page.nextCursor };
      },
      async updateSubscriber(req, ctx) {
        const view = await updateSubscriber(deps, audited(ctx, req.audit), {
          id: req.id,
          email: req.email,
          status: statusFromProto(req.status),
          metadata: req.metadata,
          locale: req.locale,
        });
        return { subscriber: subscriberToProto(view) };
      },
      async deleteSubscriber(req, ctx) {
        await deleteSubscriber(deps, audited(ctx, req.audit), req.id);
        return {};
      },
      async addTags(req, ctx) {
        const view = await addTags(deps, audited(ctx, req.audit), req.subscriberId, req.tags);
        return { subscriber: subscriberToProto(view) };
      },
      async removeTag(req, ctx) {
        const view = await removeTag(deps, audited(ctx, req.audit), req.subscriberId, req.tagName);
        return { subscriber: subscriberToProto(view) };
      },
      async listSubscriberEvents(req, ctx) {
        const page = await listSubscriberEvents(scopeOf(readCallContext(ctx)), {
          subscriberId: req.subscriberId,
          limit: req.limit,
          cursor: req.cursor,
        });
        return { events: page.items.map(auditToProto), nextCursor: page.nextCursor };
      },
      async exportSubscriberData(req, ctx) {
        return { json: await exportSubscriberData(deps, audited(ctx, req.audit), req.subscriberId) };
      },
      async unsubscribeAll(req, ctx) {
        const who = req.recipient;
        const target = who.case === "subscriberId" ? { subscriberId: who.value } : { email: who.case === "email" ? who.value : "" };
        const result = await unsubscribeAll(deps, audited(ctx, req.audit), target);
        return {
          ...(result.subscriber ? { subscriber: subscriberToProto(result.subscriber) } : {}),
          outcome: unsubscribeAllOutcomeToProto(result.outcome),
        };
      },
    });
    router.service(TagService, {
      async createTag(req, ctx) {
        const view = await createTag(deps, scopeOf(readCallContext(ctx)), {
          name: req.name,
          description: req.description,
          isPublic: req.isPublic,
          translations: req.translations,
        });
        return { tag: tagToProto(view) };
      },
      async getTag(req, ctx) {
        return { tag: tagToProto(await getTag(scopeOf(readCallContext(ctx)), req.id)) };
      },
      async listTags(req, ctx) {
        const page = await listTags(scopeOf(readCallContext(ctx)), { limit: req.limit, cursor: req.cursor });
        return { tags: page.items.map(tagToProto), nextCursor: page.nextCursor };
      },
      async updateTag(req, ctx) {
        const view = await updateTag(deps, scopeOf(readCallContext(ctx)), {
          id: req.id,
          name: req.name,
          description: req.description,
          isPublic: req.isPublic,
          translations: req.translations?.byLocale,
        });
        return { tag: tagToProto(view) };
      },
      async deleteTag(req, ctx) {
        await deleteTag(deps, audited(ctx, req.audit), req.id);
        return {};
      },
    });
    router.service(AudienceService, {
      async countAudience(req, ctx) {
        const count = await countAudience(scopeOf(readCallContext(ctx)), audienceFilterFromProto(req.filter));
        return { count: BigInt(count) };
      },
      async listAudience(req, ctx) {
        const page = await listAudience(scopeOf(readCallContext(ctx)), {
          filter: audienceFilterFromProto(req.filter),
          after: req.afterSubscriberId,
          limit: req.limit,
        });
        return { subscriberIds: page.subscriberIds, nextAfter: page.nextAfter };
      },
      async getRecipients(req, ctx) {
        const found = await getRecipients(deps, scopeOf(readCallContext(ctx)), req.subscriberIds);
        return { recipients: found.map(recipientToProto) };
      },
      async getRecipientByEmail(req, ctx) {
        const found = await getRecipientByEmail(deps, scopeOf(readCallContext(ctx)), req.email);
        return {
          ...(found.recipient ? { recipient: recipientToProto(found.recipient) } : {}),
          mailability: mailabilityToProto(found.mailability),
        };
      },
      async getRecipientsByEmail(req, ctx) {
        const answers = await getRecipientsByEmail(deps, scopeOf(readCallContext(ctx)), req.emails);
        return {
          answers: answers.map((found) => ({
            ...(found.recipient ? { recipient: recipientToProto(found.recipient) } : {}),
            mailability: mailabilityToProto(found.mailability),
          })),
        };
      },
    });
    router.service(SuppressionService, {
      async listSuppressions(req, ctx) {
        const page = await listSuppressions(deps, scopeOf(readCallContext(ctx)), {
          limit: req.limit,
          cursor: req.cursor,
          reason: suppressionReasonFromProto(req.reason),
          email: req.email,
        });
        return { suppressions: page.items.map(suppressionToProto), nextCursor: page.nextCursor };
      },
      async addSuppression(req, ctx) {
        const result = await addSuppression(deps, audited(ctx, req.audit), { email: req.email, reason: suppressionReasonFromProto(req.reason) });
        return { suppression: suppressionToProto(result.suppression), created: result.created };
      },
      async removeSuppression(req, ctx) {
        return { suppression: suppressionToProto(await removeSuppression(deps, audited(ctx, req.audit), { email: req.email, reason: req.reason })) };
      },
      async recordDeliveryProblem(req, ctx) {
        return recordDeliveryProblem(deps, scopeOf(readCallContext(ctx)), { email: req.email, problem: deliveryProblemFromProto(req.problem), emailId: req.emailId });
      },
    });
  };
}
