import { delivery } from "@emailsvc/proto";
import { settleLimited } from "@emailsvc/async";
import type { CrossTenantCollection } from "@emailsvc/storage";
import { TEMPLATE_DELETED } from "../domain/trigger.js";
import type { FireDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { fireCall, type FiringDeps } from "./fires.js";
import { DeferredSendError, PermanentSendError } from "./ports.js";

/** How long one firing attempt holds its fire. */
const FIRE_LEASE_MS = 30_000;
/** Fires sent at once. */
const FIRE_CONCURRENCY = 8;

/**
 * Sends the fires that are due (up to `limit`), a few at once; returns how
 * many it took. Each is claimed with a lease first, so two firers never send
 * one fire at once, and a firer that died mid-send leaves it to the next
 * after the lease.
 */
export async function fireDue(
  deps: FiringDeps,
  due: CrossTenantCollection<FireDoc>,
  forTenant: (tenant: string) => TenantRepositories,
  limit = 100,
): Promise<number> {
  const now = deps.now();
  const fires = await due.find({ state: "pending", due_at: { $lte: now } }, { sort: { due_at: 1 }, limit });
  const ready = fires.filter((fire) => fire.lease_until < now);
  const results = await settleLimited(ready, FIRE_CONCURRENCY, (fire) => fireOne(deps, forTenant(fire.tenant), fire));
  for (const result of results) {
    if (result.status === "rejected") deps.logger.warn({ err: String(result.reason) }, "firing a trigger failed; it is tried again");
  }
  return ready.length;
}

async function fireOne(deps: FiringDeps, repos: TenantRepositories, fire: FireDoc): Promise<void> {
  const now = deps.now();
  const claimed = await repos.fires.updateOne(
    // Still due: a fire deferred since it was read (defer, below) waits.
    { _id: fire._id, state: "pending", due_at: { $lte: now }, lease_until: { $lt: now } },
    { $set: { lease_until: now + FIRE_LEASE_MS, updated_at: now }, $inc: { attempts: 1 } },
  );
  if (!claimed) return; // another firer has it, it is done, or it was deferred
  const call = fireCall(claimed);
  const finish = (state: FireDoc["state"], reason: string, emailId = "") =>
    repos.fires.updateOne({ _id: claimed._id, state: "pending" }, { $set: { state, reason, email_id: emailId, lease_until: 0, updated_at: deps.now() } });
  const fail = async (reason: string) => {
    if (await finish("failed", reason)) await recordFailure(deps, repos, claimed, reason);
  };
  try {
    // A trigger disabled or deleted before its fire was due sends nothing.
    const trigger = await repos.triggers.findOne({ _id: claimed.trigger_id });
    if (!trigger || !trigger.is_active) return void (await finish("skipped", "trigger_inactive"));
    const [subscriber, slug] = await Promise.all([
      deps.firing.subscriber(call, claimed.subscriber_id),
      deps.firing.templateSlug(call, claimed.template_id),
    ]);
    // Erased meanwhile (or before this fire was recorded: events of two topics come in no fixed
    // order): the fire goes, as the erasure's; nothing of the subscriber is kept.
    if (!subscriber) return void (await repos.fires.deleteOne({ _id: claimed._id }));
    if (!slug) return void (await fail("template_not_found"));
    const sent = await deps.firing.send(call, { templateSlug: slug, to: subscriber.email, idempotencyKey: `trigger-fire:${claimed._id}` });
    // Refused by delivery (the recipient may not get this category of mail): recorded, never retried,
    // with the reason's code (the one table; `send_refused` for a reason this build does not know).
    if (sent.refused !== undefined) return void (await finish("skipped", delivery.failureReasonCode(sent.refused) ?? "send_refused", sent.emailId));
    await finish("sent", "", sent.emailId);
  } catch (err) {
    if (err instanceof PermanentSendError) {
      await fail(err.code || "send_refused");
      return;
    }
    if (err instanceof DeferredSendError) {
      await defer(deps, repos, claimed, err);
      return;
    }
    // Not now (a service unreachable): free it, later by a backoff that grows with the attempts.
    const backoffMs = Math.min(60_000, 500 * 2 ** Math.min(claimed.attempts, 7));
    await repos.fires.updateOne(
      { _id: claimed._id, state: "pending" },
      { $set: { lease_until: 0, due_at: deps.now() + backoffMs, updated_at: deps.now() } },
    );
    throw err;
  }
}

/**
 * Delivery asks for the fire later (the account's test-mode quota is used
 * up): it waits until the Retry-After, and so do the tenant's other fires due
 * before then, which the same quota would refuse (a backlog would otherwise
 * ask delivery for every fire at each free message). The trigger shows why
 * (`last_failure_reason`, `last_failure_at`) and one log line says so: not a
 * warning per fire and pass, and not "delivery unavailable".
 */
async function defer(deps: FiringDeps, repos: TenantRepositories, fire: FireDoc, refusal: DeferredSendError): Promise<void> {
  const now = deps.now();
  const until = now + refusal.retryAfterMs;
  await repos.fires.updateOne({ _id: fire._id, state: "pending" }, { $set: { lease_until: 0, due_at: until, updated_at: now } });
  // Fires being sent right now (leased) finish their own attempt.
  const others = await repos.fires.updateMany({ state: "pending", due_at: { $lt: until }, lease_until: { $lt: now } }, { $set: { due_at: until, updated_at: now } });
  await repos.triggers.updateOne({ _id: fire.trigger_id }, { $set: { last_failure_reason: refusal.code, last_failure_at: now } });
  deps.logger.warn(
    { fire_id: fire._id, trigger_id: fire.trigger_id, reason: refusal.code, retry_after_s: Math.ceil(refusal.retryAfterMs / 1000), fires_deferred: others + 1 },
    "trigger fires deferred: delivery asks to send them later",
  );
}

/**
 * A fire that cannot be sent is never dropped in silence: the fire keeps its
 * reason, a warning says so (ids and the code only), and the trigger shows it
 * (`last_failure_reason`, `last_failure_at`). A trigger whose template is gone
 * is turned off, visibly (`disabled_reason: template_deleted`), since every
 * later fire would fail too; only while it still names that template.
 */
async function recordFailure(deps: FiringDeps, repos: TenantRepositories, fire: FireDoc, reason: string): Promise<void> {
  const now = deps.now();
  const templateGone = reason === "template_not_found";
  deps.logger.warn(
    { fire_id: fire._id, trigger_id: fire.trigger_id, template_id: fire.template_id, reason, ...(templateGone ? { trigger_disabled: true } : {}) },
    "trigger fire could not be sent",
  );
  const failure = { last_failure_reason: reason, last_failure_at: now };
  // One write shows both the failure and the switch-off: nobody reads the one without the other.
  if (templateGone) {
    const disabled = await repos.triggers.updateOne(
      { _id: fire.trigger_id, template_id: fire.template_id, is_active: true },
      { $set: { ...failure, is_active: false, disabled_reason: TEMPLATE_DELETED, updated_at: now } },
    );
    if (disabled) return;
  }
  await repos.triggers.updateOne({ _id: fire.trigger_id }, { $set: failure });
}
