import type { Middleware } from "koa";
import { newId } from "@emailsvc/ids";
import type { Logger } from "@emailsvc/telemetry";
import type { Collection, Doc, DocumentStore } from "@emailsvc/storage";
import type { GatewayState } from "../http/state.js";
import { READS_BY_POST } from "./roles.js";

// The account's audit log: who did what through the gateway, when, from
// where. Kept in the gateway's store, one document per action, written once
// the answer is known (its status: refusals are worth knowing too). What is
// recorded: every change a member makes with their session, and the doors of
// the members themselves (sign-in, invitations, accepts, password resets),
// and the operator's changes to an account. Integrators' API-key calls are
// not: they are the integration's traffic, not people's actions, and their
// volume would drown the log (the services keep their own audit trails).

export type AuditActorType = "member" | "api_key" | "operator";

export interface AuditEntry {
  id: string;
  accountId: string;
  at: string;
  actor: { type: AuditActorType; id: string; email?: string };
  /** The operationId. */
  action: string;
  method: string;
  /** The path with its ids, without the query; any other parameter (an address) as its name. */
  path: string;
  status: number;
  mode: "live" | "test" | null;
  ip: string;
}

interface AuditDoc extends Doc {
  account_id: string;
  at: string;
  actor: { type: AuditActorType; id: string; email?: string };
  action: string;
  method: string;
  path: string;
  status: number;
  mode: "live" | "test" | null;
  ip: string;
}

export class InvalidAuditCursorError extends Error {}

export class AuditLog {
  private readonly entries: Collection<AuditDoc>;
  /** Writes not finished yet (the trail does not hold up answers for them); flush() waits for them. */
  private readonly pending = new Set<Promise<void>>();

  constructor(store: DocumentStore) {
    this.entries = store.collection<AuditDoc>("audit_log");
  }

  async ensureIndexes(): Promise<void> {
    // The log of an account, newest first: find({ account_id, _id < cursor }) sorted by _id descending.
    await this.entries.createIndexes([
      { name: "account_id_id", fields: { account_id: 1, _id: 1 } },
      // The retention sweep (members/sweep.ts): entries older than AUDIT_LOG_RETENTION_DAYS.
      { name: "at", fields: { at: 1 } },
    ]);
  }

  async record(entry: Omit<AuditEntry, "id">): Promise<void> {
    await this.entries.insertOne({
      _id: newId("aud"),
      account_id: entry.accountId,
      at: entry.at,
      actor: entry.actor,
      action: entry.action,
      method: entry.method,
      path: entry.path,
      status: entry.status,
      mode: entry.mode,
      ip: entry.ip,
    });
  }

  /** Records without holding up the caller; a failure goes to `onError`. flush() waits for what is in flight. */
  recordLater(entry: Omit<AuditEntry, "id">, onError: (err: unknown) => void): void {
    const write = this.record(entry)
      .catch(onError)
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  /** Waits for every write in flight (at shutdown). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** The account's entries, newest first. */
  async list(accountId: string, limit: number, cursor?: string): Promise<{ items: AuditEntry[]; nextCursor: string | null }> {
    let before: string | undefined;
    if (cursor !== undefined) {
      before = Buffer.from(cursor, "base64url").toString("utf8");
      if (!/^aud_[0-9a-hjkmnp-tv-z]{26}$/.test(before) || Buffer.from(before, "utf8").toString("base64url") !== cursor) throw new InvalidAuditCursorError();
    }
    const docs = await this.entries.find(before ? { account_id: accountId, _id: { $lt: before } } : { account_id: accountId }, { sort: { _id: -1 }, limit: limit + 1 });
    const items = docs.slice(0, limit);
    const last = items[items.length - 1];
    return {
      items: items.map((d) => ({ id: d._id, accountId: d.account_id, at: d.at, actor: d.actor, action: d.action, method: d.method, path: d.path, status: d.status, mode: d.mode, ip: d.ip })),
      nextCursor: docs.length > limit && last ? Buffer.from(last._id, "utf8").toString("base64url") : null,
    };
  }
}

const ID = /^[a-z]+_[0-9a-hjkmnp-tv-z]{26}$/;

/** The path as recorded: ids kept, any other parameter (an address, a tag's name) replaced by its name. */
export function auditPath(template: string, params: Record<string, string | undefined>): string {
  return template.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const value = params[name];
    return value !== undefined && ID.test(value) ? value : whole;
  });
}

/**
 * Records the actions the log keeps, once the answer is known (outside the
 * problem middleware, so that a refusal's status is known). The write does
 * not hold up the answer: a door that records only for members (a password
 * reset) must answer as fast for anyone. A failed write is logged, never the
 * request's failure: the action happened. The gateway flushes the writes in
 * flight when it closes.
 */
export function auditTrail(log: AuditLog, logger: Logger, clientIp: (ctx: Parameters<Middleware<GatewayState>>[0]) => string): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      const operation = ctx.state.operation;
      const entry = operation ? entryOf(ctx, operation) : undefined;
      if (entry) {
        const requestId = ctx.state.requestId;
        log.recordLater({ ...entry, at: new Date().toISOString(), method: ctx.method, path: auditPath(operation!.path, ctx.state.pathParams ?? {}), status: ctx.status, ip: clientIp(ctx) }, (err) =>
          logger.warn({ request_id: requestId, err: err instanceof Error ? err.message : String(err) }, "audit log entry not written"),
        );
      }
    }
  };
}

function entryOf(
  ctx: Parameters<Middleware<GatewayState>>[0],
  operation: NonNullable<GatewayState["operation"]>,
): Pick<AuditEntry, "accountId" | "actor" | "action" | "mode"> | undefined {
  const auth = ctx.state.auth;
  if (auth?.member && ctx.method !== "GET" && ctx.method !== "HEAD" && !READS_BY_POST.has(operation.id)) {
    return { accountId: auth.accountId, actor: { type: "member", id: auth.member.id, email: auth.member.email }, action: operation.id, mode: auth.mode };
  }
  const actor = ctx.state.auditActor;
  if (actor) return { accountId: actor.accountId, actor: { type: actor.type, id: actor.id, email: actor.email }, action: operation.id, mode: null };
  // The operator's changes to an account: the account in the path, or the one just made.
  const pathAccount = ctx.state.pathParams?.id;
  const account = ctx.state.auditAccount ?? (pathAccount && /^acc_/.test(pathAccount) && ctx.status < 400 ? pathAccount : undefined);
  if (account && operation.path.startsWith("/admin/") && ctx.method !== "GET") {
    return { accountId: account, actor: { type: "operator", id: "admin_token" }, action: operation.id, mode: null };
  }
  return undefined;
}
