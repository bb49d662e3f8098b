// An in-memory stand-in for the subscribers service, served over
// createRouterTransport: the gateway's unit tests exercise its mapping, headers
// and error translation without the real service. It follows the contract
// (tenant from headers, emails unique per tenant case-insensitively, opaque
// cursors, AppErrors with ErrorDetail) but none of the real service's storage.

import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  health,
  SubscriberEventSchema,
  SubscriberSchema,
  SubscriberService,
  SubscriberStatus,
  TagSchema,
  TagService,
  UnsubscribeAllOutcome,
  type AuditContext,
  type Subscriber,
  type SubscriberEvent,
  type Tag,
} from "@emailsvc/proto";
import { AppError, invalid, notFound } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { readCallContext, tenantKey, type CallContext } from "@emailsvc/tenancy";

export interface RecordedCall {
  method: string;
  context: CallContext;
  headers: Headers;
  /** Whether the gateway gave the call a deadline. */
  hasDeadline: boolean;
  signal: AbortSignal;
  /** The request message as the fake received it (fakes that keep it). */
  request?: unknown;
}

interface Tenant {
  subscribers: Subscriber[];
  tags: Tag[];
  events: Map<string, SubscriberEvent[]>;
}

export class FakeSubscribers {
  readonly calls: RecordedCall[] = [];
  /** Thrown by the next call (then cleared). */
  failNext: unknown;
  /** Delays every call (ms), to hold requests in flight. */
  delayMs = 0;
  serving = true;
  private readonly tenants = new Map<string, Tenant>();

  get lastCall(): RecordedCall | undefined {
    return this.calls[this.calls.length - 1];
  }

  routes(): (router: ConnectRouter) => void {
    return (router) => {
      router.service(SubscriberService, {
        createSubscriber: (req, ctx) =>
          this.handle("createSubscriber", ctx, (t, call) => {
            const email = req.email.trim();
            if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) {
              throw invalid("email is invalid", [{ field: "email", description: "is not a valid email address" }]);
            }
            const existing = t.subscribers.find((s) => s.email.toLowerCase() === email.toLowerCase());
            if (existing) {
              throw new AppError("conflict", "email_taken", "a subscriber with this email exists", { existingId: existing.id });
            }
            if (JSON.stringify(req.metadata ?? {}).length > 1000) {
              throw new AppError("too_large", "metadata_too_large", "metadata is larger than 1000 bytes");
            }
            for (const name of req.tags) this.ensureTag(t, name);
            const now = timestampFromDate(new Date());
            const subscriber = create(SubscriberSchema, {
              id: newId("sub"),
              email,
              status: req.status || SubscriberStatus.ACTIVE,
              locale: req.locale,
              metadata: req.metadata ?? {},
              tags: [...new Set(req.tags)].sort(),
              createdAt: now,
              updatedAt: now,
            });
            t.subscribers.push(subscriber);
            this.event(t, subscriber.id, "subscriber.created", call.actor, {}, req.audit);
            return { subscriber };
          }, req),
        getSubscriber: (req, ctx) => this.handle("getSubscriber", ctx, (t) => ({ subscriber: this.find(t, req.id) }), req),
        getSubscriberByEmail: (req, ctx) =>
          this.handle("getSubscriberByEmail", ctx, (t) => {
            const subscriber = t.subscribers.find((s) => s.email.toLowerCase() === req.email.toLowerCase());
            if (!subscriber) throw notFound("subscriber");
            return { subscriber };
          }, req),
        listSubscribers: (req, ctx) =>
          this.handle("listSubscribers", ctx, (t) => {
            const prefix = req.emailPrefix.toLowerCase();
            const tag = req.tag.toLowerCase();
            const all = t.subscribers.filter(
              (s) =>
                (!req.status || s.status === req.status) &&
                s.email.toLowerCase().startsWith(prefix) &&
                (!tag || s.tags.some((name) => name.toLowerCase() === tag)),
            );
            const { items, nextCursor } = paginate(all, req.limit, req.cursor);
            return { subscribers: items, nextCursor };
          }, req),
        updateSubscriber: (req, ctx) =>
          this.handle("updateSubscriber", ctx, (t, call) => {
            const subscriber = this.find(t, req.id);
            if (req.email !== undefined) subscriber.email = req.email;
            if (req.locale !== undefined) subscriber.locale = req.locale;
            if (req.status && req.status !== subscriber.status) {
              this.event(t, subscriber.id, "subscriber.status_changed", call.actor, { to: SubscriberStatus[req.status] }, req.audit);
              subscriber.status = req.status;
            }
            if (req.metadata) {
              const merged: JsonObject = { ...(subscriber.metadata ?? {}) };
              for (const [k, v] of Object.entries(req.metadata)) {
                if (v === null) delete merged[k];
                else merged[k] = v;
              }
              subscriber.metadata = merged;
            }
            subscriber.updatedAt = timestampFromDate(new Date());
            return { subscriber };
          }, req),
        // The contract's outline only (the real rules: services/subscribers, unsubscribe-all.ts): active becomes unsubscribed.
        unsubscribeAll: (req, ctx) =>
          this.handle("unsubscribeAll", ctx, (t, call) => {
            const who = req.recipient;
            const subscriber =
              who.case === "subscriberId" ? this.find(t, who.value) : t.subscribers.find((s) => s.email.toLowerCase() === String(who.value ?? "").toLowerCase());
            if (!subscriber) return { outcome: UnsubscribeAllOutcome.ADDRESS_SUPPRESSED };
            if (subscriber.status !== SubscriberStatus.ACTIVE) return { subscriber, outcome: UnsubscribeAllOutcome.ALREADY_UNSUBSCRIBED };
            this.event(t, subscriber.id, "subscriber.status_changed", call.actor, { to: "UNSUBSCRIBED" }, req.audit);
            subscriber.status = SubscriberStatus.UNSUBSCRIBED;
            return { subscriber, outcome: UnsubscribeAllOutcome.UNSUBSCRIBED };
          }, req),
        deleteSubscriber: (req, ctx) =>
          this.handle("deleteSubscriber", ctx, (t) => {
            const subscriber = this.find(t, req.id);
            t.subscribers = t.subscribers.filter((s) => s !== subscriber);
            t.events.delete(subscriber.id);
            return {};
          }, req),
        addTags: (req, ctx) =>
          this.handle("addTags", ctx, (t, call) => {
            const subscriber = this.find(t, req.subscriberId);
            for (const name of req.tags) {
              this.ensureTag(t, name);
              if (!subscriber.tags.includes(name)) {
                subscriber.tags.push(name);
                this.event(t, subscriber.id, "subscriber.tag_added", call.actor, { tag: name }, req.audit);
              }
            }
            subscriber.tags.sort();
            return { subscriber };
          }, req),
        removeTag: (req, ctx) =>
          this.handle("removeTag", ctx, (t, call) => {
            const subscriber = this.find(t, req.subscriberId);
            if (!subscriber.tags.includes(req.tagName)) throw notFound("tag on subscriber");
            subscriber.tags = subscriber.tags.filter((n) => n !== req.tagName);
            this.event(t, subscriber.id, "subscriber.tag_removed", call.actor, { tag: req.tagName }, req.audit);
            return { subscriber };
          }, req),
        listSubscriberEvents: (req, ctx) =>
          this.handle("listSubscriberEvents", ctx, (t) => {
            this.find(t, req.subscriberId);
            const { items, nextCursor } = paginate(t.events.get(req.subscriberId) ?? [], req.limit, req.cursor);
            return { events: items, nextCursor };
          }, req),
      });
      router.service(TagService, {
        createTag: (req, ctx) =>
          this.handle("createTag", ctx, (t) => {
            if (t.tags.some((tag) => tag.name === req.name)) throw new AppError("conflict", "tag_name_taken", "a tag with this name exists");
            const tag = this.ensureTag(t, req.name);
            tag.description = req.description;
            tag.isPublic = req.isPublic;
            tag.translations = req.translations;
            return { tag };
          }, req),
        getTag: (req, ctx) => this.handle("getTag", ctx, (t) => ({ tag: this.findTag(t, req.id) }), req),
        listTags: (req, ctx) =>
          this.handle("listTags", ctx, (t) => {
            const { items, nextCursor } = paginate(t.tags, req.limit, req.cursor);
            return { tags: items, nextCursor };
          }, req),
        updateTag: (req, ctx) =>
          this.handle("updateTag", ctx, (t) => {
            const tag = this.findTag(t, req.id);
            if (req.name !== undefined) tag.name = req.name;
            if (req.description !== undefined) tag.description = req.description;
            if (req.isPublic !== undefined) tag.isPublic = req.isPublic;
            if (req.translations !== undefined) tag.translations = req.translations.byLocale;
            return { tag };
          }, req),
        deleteTag: (req, ctx) =>
          this.handle("deleteTag", ctx, (t) => {
            const tag = this.findTag(t, req.id);
            t.tags = t.tags.filter((x) => x !== tag);
            return {};
          }, req),
      });
      router.service(health.Health, {
        check: async () => ({
          status: this.serving
            ? health.HealthCheckResponse_ServingStatus.SERVING
            : health.HealthCheckResponse_ServingStatus.NOT_SERVING,
        }),
        // eslint-disable-next-line require-yield
        watch: async function* () {
          throw new ConnectError("not implemented", Code.Unimplemented);
        },
      });
    };
  }

  /** Records the call, applies injected delay/failure, runs `work` in the caller's tenant. */
  private async handle<T>(method: string, ctx: HandlerContext, work: (tenant: Tenant, call: CallContext) => T, request?: unknown): Promise<T> {
    const call = readCallContext(ctx);
    this.calls.push({ method, context: call, headers: ctx.requestHeader, hasDeadline: ctx.timeoutMs() !== undefined, signal: ctx.signal, request });
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.failNext !== undefined) {
      const failure = this.failNext;
      this.failNext = undefined;
      throw failure;
    }
    const key = tenantKey(call.tenant);
    let tenant = this.tenants.get(key);
    if (!tenant) {
      tenant = { subscribers: [], tags: [], events: new Map() };
      this.tenants.set(key, tenant);
    }
    return work(tenant, call);
  }

  private find(t: Tenant, id: string): Subscriber {
    const subscriber = t.subscribers.find((s) => s.id === id);
    if (!subscriber) throw notFound("subscriber");
    return subscriber;
  }

  private findTag(t: Tenant, id: string): Tag {
    const tag = t.tags.find((x) => x.id === id);
    if (!tag) throw notFound("tag");
    return tag;
  }

  private ensureTag(t: Tenant, name: string): Tag {
    const existing = t.tags.find((x) => x.name === name);
    if (existing) return existing;
    const now = timestampFromDate(new Date());
    const tag = create(TagSchema, { id: newId("tag"), name, description: "", isPublic: false, createdAt: now, updatedAt: now });
    t.tags.push(tag);
    return tag;
  }

  private event(t: Tenant, subscriberId: string, type: string, actor: string, data: JsonObject, audit?: AuditContext): void {
    const list = t.events.get(subscriberId) ?? [];
    list.push(
      create(SubscriberEventSchema, {
        id: newId("evt"),
        type,
        occurredAt: timestampFromDate(new Date()),
        actor,
        data,
        source: audit?.source ?? "",
        ip: audit?.ip ?? "",
        userAgent: audit?.userAgent ?? "",
      }),
    );
    t.events.set(subscriberId, list);
  }
}

/** Offset cursors signed with a checksum: a changed cursor is refused as the real service refuses one. */
export function paginate<T>(all: T[], limit: number, cursor: string): { items: T[]; nextCursor: string } {
  const size = limit || 50;
  let offset = 0;
  if (cursor) {
    const match = /^o(\d+)\.(\d+)$/.exec(Buffer.from(cursor, "base64url").toString());
    if (!match || Number(match[2]) !== Number(match[1]) * 7 + 3) {
      throw invalid("cursor is invalid", [{ field: "cursor", description: "is not a valid cursor" }]);
    }
    offset = Number(match[1]);
  }
  const items = all.slice(offset, offset + size);
  const next = offset + size < all.length ? offset + size : undefined;
  return {
    items,
    nextCursor: next === undefined ? "" : Buffer.from(`o${next}.${next * 7 + 3}`).toString("base64url"),
  };
}
