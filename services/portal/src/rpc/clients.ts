import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  AudienceService,
  campaigns,
  delivery,
  SubscriberService,
  type AuditContextSchema,
  type Mailability,
  SubscriberStatus,
  TagService,
  templates,
  type Subscriber,
  type Tag,
} from "@emailsvc/proto";
import { DEFAULT_LINK_TEMPLATE } from "../domain/link-template.js";
import { AppError, readError } from "@emailsvc/errors";
import { callHeaders, type CallContext } from "@emailsvc/tenancy";
import { SignUpRefused, type SignUpPort } from "../usecases/sign-up.js";
import type { PublicTagNames } from "../usecases/forms.js";

// What the portal asks of the subscribers service, always with the tenant and
// the subscriber of a verified preference token. The subscribers service
// stays the one owner of subscribers, tags and the audit trail: the portal
// holds no copy of any of it.

const TIMEOUT_MS = 10_000;
/** Tags are listed in pages of this many (the most ListTags gives). */
const TAG_PAGE = 500;
/** A tenant with more tags than this shows the first ones only: a page, not a crawl. */
const MAX_TAGS = 5_000;

/** The client of a portal request, as the audit trail keeps it. */
export interface Client {
  ip: string;
  userAgent: string;
}

export interface SubscriberDirectory {
  /** The subscriber, or undefined when unknown or erased (the token is then dead). */
  get(call: CallContext, id: string): Promise<Subscriber | undefined>;
  /** The subscriber with this address (any case), or undefined. */
  byEmail(call: CallContext, email: string): Promise<Subscriber | undefined>;
  /** The tag, or undefined when unknown or deleted. */
  tag(call: CallContext, id: string): Promise<Tag | undefined>;
  /** Every tag of the tenant, in id order. */
  tags(call: CallContext): Promise<Tag[]>;
  // Changes: each is in the subscriber's audit trail as the portal's (source `portal`, the client's IP and user agent).
  addTag(call: CallContext, subscriberId: string, tagName: string, client: Client): Promise<Subscriber>;
  removeTag(call: CallContext, subscriberId: string, tagName: string, client: Client): Promise<Subscriber>;
  setStatus(call: CallContext, subscriberId: string, status: SubscriberStatus, client: Client): Promise<Subscriber>;
  setLocale(call: CallContext, subscriberId: string, locale: string, client: Client): Promise<Subscriber>;
  /** SubscriberService.UnsubscribeAll (the one the one-click link uses too); undefined when the subscriber is gone. */
  unsubscribeAll(call: CallContext, subscriberId: string, client: Client): Promise<Subscriber | undefined>;
  erase(call: CallContext, subscriberId: string, client: Client): Promise<void>;
  /**
   * SubscriberService.ConfirmSubscriber (double opt-in): `confirmed`, or
   * `not_pending` (confirmed already, or moved on since), or `gone` (expired
   * and erased, or never there).
   */
  confirm(call: CallContext, subscriberId: string, client: Client): Promise<"confirmed" | "not_pending" | "gone">;
  /**
   * Whether the subscriber may get marketing and transactional mail now: the
   * subscribers service's one answer (AudienceService.GetRecipients, as
   * delivery asks it); undefined when the subscriber is gone.
   */
  mailability(call: CallContext, subscriberId: string): Promise<Mailability | undefined>;
}

/** Passes the subscribers service's own answers (NOT_FOUND, INVALID_ARGUMENT) on; anything else is a 503. */
function passOn(err: unknown): never {
  const ce = ConnectError.from(err);
  if (ce.code === Code.NotFound) throw new AppError("not_found", "not_found", "subscriber not found");
  if (ce.code === Code.InvalidArgument) {
    // The subscribers service's verdict on a value (e.g. an unsupported locale), with its field errors.
    const { errorCode, message, fieldViolations } = readError(err);
    throw new AppError("invalid", errorCode, message, { fieldViolations: fieldViolations.map((v) => ({ field: v.field, description: v.description })) });
  }
  throw new AppError("unavailable", "subscribers_unavailable", `the subscribers service is unavailable (${Code[ce.code]}); try again`);
}

function portalAudit(client: Client) {
  return { source: "portal", ip: client.ip, userAgent: client.userAgent };
}

function notFoundAsUndefined(err: unknown): undefined {
  if (ConnectError.from(err).code === Code.NotFound) return undefined;
  return passOn(err);
}

export function subscriberDirectory(transport: Transport): SubscriberDirectory {
  const subscribers = createClient(SubscriberService, transport);
  const tags = createClient(TagService, transport);
  const audience = createClient(AudienceService, transport);
  const options = (call: CallContext) => ({ headers: callHeaders(call), timeoutMs: TIMEOUT_MS });
  return {
    async get(call, id) {
      const res = await subscribers.getSubscriber({ id }, options(call)).catch(notFoundAsUndefined);
      return res?.subscriber;
    },
    async byEmail(call, email) {
      const res = await subscribers.getSubscriberByEmail({ email }, options(call)).catch((err: unknown) => {
        // An address the subscribers service refuses as malformed is no subscriber either.
        if (ConnectError.from(err).code === Code.InvalidArgument) return undefined;
        return notFoundAsUndefined(err);
      });
      return res?.subscriber;
    },
    async tag(call, id) {
      const res = await tags.getTag({ id }, options(call)).catch(notFoundAsUndefined);
      return res?.tag;
    },
    async tags(call) {
      const all: Tag[] = [];
      let cursor = "";
      do {
        const res = await tags.listTags({ limit: TAG_PAGE, cursor }, options(call)).catch(passOn);
        all.push(...res.tags);
        cursor = res.nextCursor;
      } while (cursor !== "" && all.length < MAX_TAGS);
      return all;
    },
    async addTag(call, subscriberId, tagName, client) {
      const res = await subscribers.addTags({ subscriberId, tags: [tagName], audit: portalAudit(client) }, options(call)).catch(passOn);
      return res.subscriber!;
    },
    async removeTag(call, subscriberId, tagName, client) {
      const res = await subscribers.removeTag({ subscriberId, tagName, audit: portalAudit(client) }, options(call)).catch(passOn);
      return res.subscriber!;
    },
    async setStatus(call, subscriberId, status, client) {
      const res = await subscribers.updateSubscriber({ id: subscriberId, status, audit: portalAudit(client) }, options(call)).catch(passOn);
      return res.subscriber!;
    },
    async setLocale(call, subscriberId, locale, client) {
      const res = await subscribers.updateSubscriber({ id: subscriberId, locale, audit: portalAudit(client) }, options(call)).catch(passOn);
      return res.subscriber!;
    },
    async unsubscribeAll(call, subscriberId, client) {
      const res = await subscribers
        .unsubscribeAll({ recipient: { case: "subscriberId", value: subscriberId }, audit: portalAudit(client) }, options(call))
        .catch(notFoundAsUndefined);
      return res?.subscriber;
    },
    async mailability(call, subscriberId) {
      const res = await audience.getRecipients({ subscriberIds: [subscriberId] }, options(call)).catch(passOn);
      return res.recipients[0]?.mailability;
    },
    async confirm(call, subscriberId, client) {
      try {
        await subscribers.confirmSubscriber({ subscriberId, audit: portalAudit(client) }, options(call));
        return "confirmed";
      } catch (err) {
        const code = ConnectError.from(err).code;
        if (code === Code.FailedPrecondition) return "not_pending";
        if (code === Code.NotFound) return "gone";
        return passOn(err);
      }
    },
    async erase(call, subscriberId, client) {
      await subscribers.deleteSubscriber({ id: subscriberId, audit: portalAudit(client) }, options(call)).catch(notFoundAsUndefined);
    },
  };
}

/** Mails a subscriber a fresh preference link, through delivery (the only service that sends). */
export interface LinkMailer {
  /** Sends the tenant's template `slug` to `email`; `idempotencyKey` makes a double submit one mail. */
  send(call: CallContext, email: string, idempotencyKey: string): Promise<void>;
}

export function linkMailer(transports: { delivery: Transport; templates: Transport }, slug: string): LinkMailer {
  const emails = createClient(delivery.DeliveryService, transports.delivery);
  const templateService = createClient(templates.TemplateService, transports.templates);
  return {
    async send(call, email, idempotencyKey) {
      const options = { headers: callHeaders(call), timeoutMs: TIMEOUT_MS };
      // delivery fills {{preference_center_url}} with a fresh link for the recipient subscriber.
      const send = () => emails.sendEmail({ templateSlug: slug, to: email, idempotencyKey }, options);
      try {
        await send();
      } catch (err) {
        if (ConnectError.from(err).code !== Code.NotFound) throw err;
        // The account has no such template yet: create the default one (or find one made meanwhile), then send.
        await templateService
          .createTemplate(
            { name: DEFAULT_LINK_TEMPLATE.name, slug, subject: DEFAULT_LINK_TEMPLATE.subject, mjmlContent: DEFAULT_LINK_TEMPLATE.mjml, category: templates.TemplateCategory.TRANSACTIONAL },
            options,
          )
          .catch((createErr: unknown) => {
            if (ConnectError.from(createErr).code !== Code.AlreadyExists) throw createErr;
          });
        await send();
      }
    },
  };
}

/** Each service's part of a subscriber's export (its ExportSubscriberData), as JSON text. */
export interface ExportSources {
  /** The subscribers service's part; undefined when the subscriber is unknown or erased. */
  subscribers(call: CallContext, subscriberId: string, audit: AuditContextInit): Promise<string | undefined>;
  delivery(call: CallContext, subscriberId: string): Promise<string>;
  campaigns(call: CallContext, subscriberId: string): Promise<string>;
}

export type AuditContextInit = MessageInitShape<typeof AuditContextSchema>;

/** A part that did not come fails the whole export: never a partial one without saying so. */
function partMissing(service: string, err: unknown): never {
  const ce = ConnectError.from(err);
  throw new AppError("unavailable", "export_incomplete", `the ${service} service did not give its part of the export (${Code[ce.code]}); nothing was exported, try again`);
}

export function exportSources(transports: { subscribers: Transport; delivery: Transport; campaigns: Transport }): ExportSources {
  const subscribers = createClient(SubscriberService, transports.subscribers);
  const emails = createClient(delivery.DeliveryService, transports.delivery);
  const campaignsClient = createClient(campaigns.CampaignService, transports.campaigns);
  // An export reads every record of the subscriber: more time than a page view.
  const options = (call: CallContext) => ({ headers: callHeaders(call), timeoutMs: 30_000 });
  return {
    async subscribers(call, subscriberId, audit) {
      try {
        return (await subscribers.exportSubscriberData({ subscriberId, audit }, options(call))).json;
      } catch (err) {
        if (ConnectError.from(err).code === Code.NotFound) return undefined;
        return partMissing("subscribers", err);
      }
    },
    async delivery(call, subscriberId) {
      return (await emails.exportSubscriberData({ subscriberId }, options(call)).catch((err: unknown) => partMissing("delivery", err))).json;
    },
    async campaigns(call, subscriberId) {
      return (await campaignsClient.exportSubscriberData({ subscriberId }, options(call)).catch((err: unknown) => partMissing("campaigns", err))).json;
    },
  };
}

/** The subscribers service's SignUp, for the signup forms. */
export function signUpClient(transport: Transport): SignUpPort {
  const subscribers = createClient(SubscriberService, transport);
  return {
    async signUp(call, request) {
      try {
        await subscribers.signUp(
          {
            email: request.email,
            tags: request.tags,
            metadata: request.metadata,
            locale: request.locale,
            consent: request.consent,
            audit: request.audit,
          },
          { headers: callHeaders(call), timeoutMs: TIMEOUT_MS },
        );
      } catch (err) {
        const ce = ConnectError.from(err);
        if (ce.code === Code.InvalidArgument) {
          // Which field the person may correct, from the service's field violations (never its message: it may hold the address).
          const field = readError(err).fieldViolations[0]?.field ?? "email";
          throw new SignUpRefused(field.startsWith("tags") ? "tags" : field.startsWith("metadata") ? "metadata" : field === "locale" ? "locale" : "email");
        }
        throw new AppError("unavailable", "subscribers_unavailable", `the subscribers service did not take the signup (${Code[ce.code]})`);
      }
    },
  };
}

/** The tenant's public tag names, for checking a form's tags. */
export function publicTagNames(directory: SubscriberDirectory): PublicTagNames {
  return {
    async publicTagNames(call) {
      return new Set((await directory.tags(call)).filter((tag) => tag.isPublic).map((tag) => tag.name));
    },
  };
}
