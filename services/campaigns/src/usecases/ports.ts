import type { AudienceFilter, delivery } from "@emailsvc/proto";
import type { CallContext } from "@emailsvc/tenancy";

// What the use cases ask of other services, as they need it. The adapters
// (gRPC clients with the caller's tenant in the headers) are in rpc/clients.ts;
// tests hand in their own.

/** Who a filter reaches (the subscribers service's AudienceService). */
export interface AudienceSource {
  /**
   * Active subscribers matching `filter` now. Rejects with the subscribers
   * service's own INVALID_ARGUMENT (unknown tags, a bad condition), passed on
   * as it is, so that the caller sees which tag or condition is wrong.
   */
  count(call: CallContext, filter: AudienceFilter): Promise<number>;
  /** One page of the audience's ids after `after`, ascending; `nextAfter` is "" on the last page. */
  page(call: CallContext, filter: AudienceFilter, after: string, limit: number): Promise<{ ids: string[]; nextAfter: string }>;
}

/** Whether a template exists (the templates service). */
export interface TemplateDirectory {
  /** True for a live template of the call's tenant. */
  exists(call: CallContext, templateId: string): Promise<boolean>;
  /** The current version of a live template of the call's tenant, or undefined when there is none. */
  currentVersion(call: CallContext, templateId: string): Promise<number | undefined>;
}

/** A subscriber as a trigger needs it: where to send (whether they may get the mail is delivery's answer). */
export interface SubscriberContact {
  email: string;
}

/** What firing a trigger asks of other services. */
export interface FiringServices {
  /** The subscriber, or undefined when there is none (deleted meanwhile). */
  subscriber(call: CallContext, subscriberId: string): Promise<SubscriberContact | undefined>;
  /** The name of a tag, or undefined when it is gone. */
  tagName(call: CallContext, tagId: string): Promise<string | undefined>;
  /** The slug of a live template, or undefined when it is gone. */
  templateSlug(call: CallContext, templateId: string): Promise<string | undefined>;
  /**
   * Queues the mail with delivery under `idempotencyKey` (a repeat returns the
   * same email); resolves to the email id, and when delivery refused the
   * recipient (they may not get the template's category of mail: delivery's
   * decision on the subscribers service's answer), the reason. Rejects
   * with a PermanentSendError when delivery refuses the request for good, and
   * a DeferredSendError when it asks for it later (a quota used up).
   */
  send(call: CallContext, input: { templateSlug: string; to: string; idempotencyKey: string }): Promise<SendOutcome>;
}

/** What delivery did with a fire's mail. */
export interface SendOutcome {
  emailId: string;
  /** Set when delivery refused the recipient: its reason (e.g. RECIPIENT_UNSUBSCRIBED). */
  refused?: delivery.FailureReason | undefined;
}

/** Delivery refused the request (the template or the recipient is unusable): retrying will not help. */
export class PermanentSendError extends Error {
  constructor(readonly code: string) {
    super(`delivery refused the send: ${code}`);
    this.name = "PermanentSendError";
  }
}

/**
 * Delivery refused the request for now and said when to ask again: the
 * account's test-mode quota is used up (`test_mode_quota_exceeded`, a 429
 * with Retry-After). Retrying sooner would be refused too.
 */
export class DeferredSendError extends Error {
  constructor(
    readonly code: string,
    readonly retryAfterMs: number,
  ) {
    super(`delivery asks to send later: ${code}`);
    this.name = "DeferredSendError";
  }
}
