import type { JsonObject } from "@bufbuild/protobuf";
import { SubscriberStatus, type Subscriber, type SubscriberEvent } from "@emailsvc/proto";
import { rfc3339 } from "../../routes/json.js";

// Proto messages <-> the REST API's snake_case JSON. Only mapping here: the
// rules live in the subscribers service.

export interface SubscriberJson {
  id: string;
  email: string;
  status: string;
  locale: string | null;
  metadata: JsonObject;
  tags: string[];
  created_at: string;
  updated_at: string;
}

export interface SubscriberEventJson {
  id: string;
  type: string;
  occurred_at: string;
  actor: string;
  source: string | null;
  ip: string | null;
  user_agent: string | null;
  data: JsonObject;
}

const STATUS_TO_JSON: Partial<Record<SubscriberStatus, string>> = {
  [SubscriberStatus.ACTIVE]: "active",
  [SubscriberStatus.UNSUBSCRIBED]: "unsubscribed",
  [SubscriberStatus.BOUNCED]: "bounced",
  [SubscriberStatus.COMPLAINED]: "complained",
  [SubscriberStatus.PENDING]: "pending",
};

const STATUS_FROM_JSON: Record<string, SubscriberStatus> = {
  active: SubscriberStatus.ACTIVE,
  unsubscribed: SubscriberStatus.UNSUBSCRIBED,
  bounced: SubscriberStatus.BOUNCED,
  complained: SubscriberStatus.COMPLAINED,
  pending: SubscriberStatus.PENDING,
};

/** `undefined` (not given) -> UNSPECIFIED, which the service reads as "no filter" / "no change". */
export function statusFromJson(value: unknown): SubscriberStatus {
  if (value === undefined) return SubscriberStatus.UNSPECIFIED;
  const status = STATUS_FROM_JSON[String(value)];
  // Bodies and queries are validated against the same enum before this runs.
  if (status === undefined) throw new Error(`unknown status ${String(value)}`);
  return status;
}

export function statusToJson(status: SubscriberStatus): string {
  const value = STATUS_TO_JSON[status];
  if (value === undefined) throw new Error(`the service returned subscriber status ${status}`);
  return value;
}

export function subscriberJson(s: Subscriber | undefined): SubscriberJson {
  if (!s) throw new Error("the service returned no subscriber");
  return {
    id: s.id,
    email: s.email,
    status: statusToJson(s.status),
    locale: s.locale || null,
    metadata: s.metadata ?? {},
    tags: s.tags,
    created_at: rfc3339(s.createdAt, "created_at"),
    updated_at: rfc3339(s.updatedAt, "updated_at"),
  };
}

export function subscriberEventJson(e: SubscriberEvent): SubscriberEventJson {
  return {
    id: e.id,
    type: e.type,
    occurred_at: rfc3339(e.occurredAt, "occurred_at"),
    actor: e.actor,
    source: e.source || null,
    ip: e.ip || null,
    user_agent: e.userAgent || null,
    data: e.data ?? {},
  };
}
