import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  SubscriberEventSchema,
  SubscriberSchema,
  SubscriberStatus,
  TagSchema,
  type Subscriber,
  type SubscriberEvent,
  type Tag,
} from "@emailsvc/proto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Status, SubscriberView } from "../domain/subscriber.js";
import type { TagView } from "../domain/tag.js";
import type { AuditDoc } from "../storage/documents.js";

// proto <-> domain only; no rules here.

const TO_PROTO: Record<Status, SubscriberStatus> = {
  active: SubscriberStatus.ACTIVE,
  unsubscribed: SubscriberStatus.UNSUBSCRIBED,
  bounced: SubscriberStatus.BOUNCED,
  complained: SubscriberStatus.COMPLAINED,
};

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
    default:
      return undefined;
  }
}

export function subscriberToProto(view: SubscriberView): Subscriber {
  return create(SubscriberSchema, {
    id: view.id,
    email: view.email,
    status: TO_PROTO[view.status],
    metadata: view.metadata as JsonObject,
    tags: view.tags,
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
  });
}

export function tagToProto(view: TagView): Tag {
  return create(TagSchema, {
    id: view.id,
    name: view.name,
    description: view.description,
    isPublic: view.isPublic,
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
  });
}
