import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ListValue, Value } from "@bufbuild/protobuf/wkt";
import {
  AudienceFilter_Match,
  MailabilitySchema,
  MailingBlock,
  RecipientSchema,
  SubscriberEventSchema,
  SubscriberSchema,
  SubscriberStatus,
  TagSchema,
  UnsubscribeAllOutcome,
  type AudienceFilter,
  type Mailability as MailabilityProto,
  type Recipient,
  type Subscriber,
  type SubscriberEvent,
  type Tag,
} from "@emailsvc/proto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { AudienceFilterInput, Match, MetadataConditionInput } from "../domain/audience.js";
import type { Mailability, MailingBlock as Block } from "../domain/mailability.js";
import type { Status, SubscriberView } from "../domain/subscriber.js";
import type { TagView } from "../domain/tag.js";
import type { RecipientView } from "../usecases/audience.js";
import type { UnsubscribeAllOutcome as Outcome } from "../usecases/unsubscribe-all.js";
import { DeliveryProblem as DeliveryProblemProto, SuppressionReason as SuppressionReasonProto, SuppressionSchema, type Suppression } from "@emailsvc/proto";
import type { SuppressionReason } from "../domain/suppression.js";
import type { SuppressionView } from "../usecases/list-suppressions.js";
import type { DeliveryProblem } from "../usecases/record-delivery-problem.js";
import type { AuditDoc } from "../storage/documents.js";
import type { AudienceSettings } from "../domain/double-opt-in.js";
import { AudienceSettingsSchema, type AudienceSettings as AudienceSettingsProto } from "@emailsvc/proto";

// proto <-> domain only; no rules here.

export function audienceSettingsToProto(settings: AudienceSettings): AudienceSettingsProto {
  return create(AudienceSettingsSchema, {
    doubleOptIn: settings.doubleOptIn,
    doubleOptInForApi: settings.doubleOptInForApi,
    confirmationExpirySeconds: settings.confirmationExpirySeconds,
    confirmationTemplate: settings.confirmationTemplate,
  });
}

const TO_PROTO: Record<Status, SubscriberStatus> = {
  active: SubscriberStatus.ACTIVE,
  unsubscribed: SubscriberStatus.UNSUBSCRIBED,
  bounced: SubscriberStatus.BOUNCED,
  complained: SubscriberStatus.COMPLAINED,
  pending: SubscriberStatus.PENDING,
};

/** A status as the contracts carry it (SubscriberService's answers, the subscriber.created event). */
export function statusToProto(status: Status): SubscriberStatus {
  return TO_PROTO[status];
}

export function statusFromProto(status: SubscriberStatus): Status | undefined {
  switch (status) {
    case SubscriberStatus.ACTIVE:
      return "active";
    case SubscriberStatus.UNSUBSCRIBED:
      return "unsubscribed";
    case SubscriberStatus.BOUNCED:
      return "bounced";
    case SubscriberStatus.COMPLAINED:
      return "complained";
    case SubscriberStatus.PENDING:
      return "pending";
    default:
      return undefined;
  }
}

export function subscriberToProto(view: SubscriberView): Subscriber {
  return create(SubscriberSchema, {
    id: view.id,
    email: view.email,
    status: TO_PROTO[view.status],
    locale: view.locale,
    metadata: view.metadata as JsonObject,
    tags: view.tags,
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
  });
}

export function recipientToProto(view: RecipientView): Recipient {
  return create(RecipientSchema, {
    subscriberId: view.subscriberId,
    email: view.email,
    status: TO_PROTO[view.status],
    metadata: view.metadata as JsonObject,
    locale: view.locale,
    mailability: mailabilityToProto(view.mailability),
  });
}

const BLOCK_TO_PROTO: Record<Block, MailingBlock> = {
  unsubscribed: MailingBlock.UNSUBSCRIBED,
  bounced: MailingBlock.BOUNCED,
  complained: MailingBlock.COMPLAINED,
  suppressed: MailingBlock.SUPPRESSED,
  unconfirmed: MailingBlock.UNCONFIRMED,
};

export function mailabilityToProto(m: Mailability): MailabilityProto {
  const block = (b: Block | undefined) => (b ? BLOCK_TO_PROTO[b] : MailingBlock.UNSPECIFIED);
  return create(MailabilitySchema, { marketing: block(m.marketing), transactional: block(m.transactional) });
}

const OUTCOME_TO_PROTO: Record<Outcome, UnsubscribeAllOutcome> = {
  unsubscribed: UnsubscribeAllOutcome.UNSUBSCRIBED,
  already_unsubscribed: UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED,
  opt_out_recorded: UnsubscribeAllOutcome.OPT_OUT_RECORDED,
  address_recorded: UnsubscribeAllOutcome.ADDRESS_RECORDED,
  address_suppressed: UnsubscribeAllOutcome.ADDRESS_SUPPRESSED,
};

export function unsubscribeAllOutcomeToProto(outcome: Outcome): UnsubscribeAllOutcome {
  return OUTCOME_TO_PROTO[outcome];
}

export function tagToProto(view: TagView): Tag {
  return create(TagSchema, {
    id: view.id,
    name: view.name,
    description: view.description,
    isPublic: view.isPublic,
    translations: Object.fromEntries(Object.entries(view.translations).map(([locale, t]) => [locale, { name: t!.name, description: t!.description }])),
    subscriberCount: BigInt(view.subscriberCount),
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
  });
}

export function auditToProto(doc: AuditDoc): SubscriberEvent {
  return create(SubscriberEventSchema, {
    id: doc._id,
    type: doc.type,
    occurredAt: timestampFromMs(doc.occurred_at),
    actor: doc.actor,
    data: doc.data as JsonObject,
    source: doc.source ?? "",
    ip: doc.ip ?? "",
    userAgent: doc.user_agent ?? "",
  });
}

function matchFromProto(match: AudienceFilter_Match): Match | undefined {
  switch (match) {
    case AudienceFilter_Match.UNSPECIFIED:
    case AudienceFilter_Match.ANY:
      return "any";
    case AudienceFilter_Match.ALL:
      return "all";
    default:
      return undefined;
  }
}

/** A google.protobuf.Value as the plain value it stands for (lists and objects only as their kind: the domain refuses them). */
function valueFromProto(value: Value): unknown {
  switch (value.kind.case) {
    case "nullValue":
      return null;
    case "numberValue":
    case "stringValue":
    case "boolValue":
      return value.kind.value;
    case "structValue":
      return {};
    case "listValue":
      return [];
    default:
      return undefined;
  }
}

function listFromProto(list: ListValue): unknown[] {
  return list.values.map(valueFromProto);
}

/** The filter of an AudienceService request; undefined when the request has none. */
export function audienceFilterFromProto(filter: AudienceFilter | undefined): AudienceFilterInput | undefined {
  if (!filter) return undefined;
  return {
    includeTags: filter.includeTags,
    match: matchFromProto(filter.match),
    excludeTags: filter.excludeTags,
    metadata: filter.metadata.map((m): MetadataConditionInput => {
      switch (m.condition.case) {
        case "equals":
          return { key: m.key, kind: "equals", value: valueFromProto(m.condition.value) };
        case "in":
          return { key: m.key, kind: "in", values: listFromProto(m.condition.value) };
        case "exists":
          return { key: m.key, kind: "exists", exists: m.condition.value };
        default:
          return { key: m.key, kind: "none" };
      }
    }),
  };
}

const REASON_TO_PROTO: Record<SuppressionReason, SuppressionReasonProto> = {
  hard_bounce: SuppressionReasonProto.HARD_BOUNCE,
  complaint: SuppressionReasonProto.COMPLAINT,
  unsubscribed: SuppressionReasonProto.UNSUBSCRIBED,
  manual: SuppressionReasonProto.MANUAL,
  erased: SuppressionReasonProto.ERASED,
};

export function suppressionReasonFromProto(reason: SuppressionReasonProto): SuppressionReason | undefined {
  return (Object.keys(REASON_TO_PROTO) as SuppressionReason[]).find((r) => REASON_TO_PROTO[r] === reason);
}

export function suppressionToProto(view: SuppressionView): Suppression {
  return create(SuppressionSchema, {
    id: view.id,
    email: view.email,
    reason: REASON_TO_PROTO[view.reason],
    source: view.source,
    createdAt: timestampFromMs(view.createdAt),
    emailId: view.emailId,
  });
}

const PROBLEMS: Partial<Record<DeliveryProblemProto, DeliveryProblem>> = {
  [DeliveryProblemProto.HARD_BOUNCE]: "hard_bounce",
  [DeliveryProblemProto.SOFT_BOUNCE]: "soft_bounce",
  [DeliveryProblemProto.COMPLAINT]: "complaint",
};

export function deliveryProblemFromProto(problem: DeliveryProblemProto): DeliveryProblem | undefined {
  return PROBLEMS[problem];
}
