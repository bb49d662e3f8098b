import { settleLimited } from "@emailsvc/async";
import { counter, histogram } from "@emailsvc/telemetry";
import type { CrossTenantCollection } from "@emailsvc/storage";
import { openSealed, SealedValueError } from "@emailsvc/tokens";
import { nextAttemptAt } from "../domain/retry.js";
import { secretKey, signatureHeader } from "../domain/signature.js";
import { MAX_ATTEMPT_LOG, type AttemptRecord, type DeliveryDoc, type EndpointDoc } from "../storage/documents.js";
import type { TenantRepositories } from "../storage/repositories.js";
import { SECRET_PURPOSE, type Deps } from "./deps.js";
import type { RecipientLookup, WebhookPoster } from "./ports.js";
import { withRecipient } from "../domain/event-types.js";

/** How long one attempt holds its delivery: beyond the request's timeout, so two senders never attempt one delivery at once. */
export const DELIVERY_LEASE_MS = 60_000;
/** Attempts by outcome (`delivered`, `retry`, `failed`) and event type: no URL, tenant or id in labels. */
const attemptsTotal = counter("webhook_attempts_total", "Webhook attempts by outcome and event type.", ["outcome", "event_type"]);
const attemptSeconds = histogram("webhook_attempt_duration_seconds", "How long an endpoint took to answer a webhook attempt.", ["outcome"]);

/** Deliveries attempted at once by one sender. */
const CONCURRENCY = 8;

export interface SendingDeps extends Deps {
  post: WebhookPoster;
  /** Delivery's answer for `to` in email events; unset (no DELIVERY_URL): `to` stays null. */
  recipients?: RecipientLookup;
  /** How long an attempt holds its delivery (default DELIVERY_LEASE_MS; tests of a takeover shorten it). */
  leaseMs?: number;
}

/**
 * Attempts the deliveries that are due (up to `limit`); returns how many it
 * took. Each is claimed first with a lease (a guarded write), so replicas
 * share the work and a sender that died mid-attempt leaves it to another
 * after the lease; the attempt then goes again with the same webhook-id.
 */
export async function sendDue(
  deps: SendingDeps,
  due: CrossTenantCollection<DeliveryDoc>,
  forTenant: (tenant: string) => TenantRepositories,
  limit = 100,
): Promise<number> {
  const now = deps.now();
  const docs = await due.find({ state: "pending", next_attempt_at: { $lte: now } }, { sort: { next_attempt_at: 1 }, limit });
  const ready = docs.filter((doc) => doc.lease_until < now);
  const results = await settleLimited(ready, CONCURRENCY, (doc) => attempt(deps, forTenant(doc.tenant), doc));
  for (const result of results) {
    if (result.status === "rejected") deps.logger.warn({ err: result.reason instanceof Error ? result.reason.message : String(result.reason) }, "a webhook attempt failed to record; it is tried again");
  }
  return ready.length;
}

async function attempt(deps: SendingDeps, repos: TenantRepositories, doc: DeliveryDoc): Promise<void> {
  const now = deps.now();
  const leaseMs = deps.leaseMs ?? DELIVERY_LEASE_MS;
  const claimed = await repos.deliveries.updateOne(
    { _id: doc._id, state: "pending", next_attempt_at: { $lte: now }, lease_until: { $lt: now } },
    // Out of the due query while it is attempted; due again at the lease's end if this sender dies.
    { $set: { lease_until: now + leaseMs, next_attempt_at: now + leaseMs, updated_at: now } },
  );
  if (!claimed) return;
  const endpoint = await repos.endpoints.findOne({ _id: claimed.endpoint_id });
  // Deleted meanwhile: its log goes with it.
  if (!endpoint) return void (await repos.deliveries.deleteOne({ _id: claimed._id }));
  if (!endpoint.is_active) {
    await repos.deliveries.updateOne(
      { _id: claimed._id, state: "pending" },
      { $set: { state: "failed", last_error: "endpoint_disabled: not sent while the endpoint is off (replay it once on)", lease_until: 0, updated_at: deps.now() } },
    );
    return;
  }
  let keys: Buffer[];
  try {
    keys = signingKeys(deps, endpoint);
  } catch (err) {
    if (!(err instanceof SealedValueError)) throw err;
    // SEALING_KEYS lost the key that sealed it: no attempt can be signed until the secret is rotated.
    await repos.deliveries.updateOne(
      { _id: claimed._id, lease_until: claimed.lease_until },
      { $set: { state: "failed", last_error: "secret_unreadable: SEALING_KEYS cannot open the endpoint's secret; rotate it, then replay", lease_until: 0, next_attempt_at: 0, updated_at: deps.now() } },
    );
    deps.logger.error({ webhook_id: endpoint._id, delivery_id: claimed._id }, "webhook secret cannot be opened with SEALING_KEYS");
    return;
  }
  let body = claimed.payload;
  const emailId = claimed.event_type.startsWith("email.") ? emailIdOf(claimed.payload) : undefined;
  if (deps.recipients && emailId) {
    let to: string | null | undefined;
    try {
      to = await deps.recipients(repos.deliveries.tenant, emailId);
    } catch {
      // Past the retry window the message goes without the address rather than never.
      if (deps.now() >= claimed.retry_from + deps.retry.retryForMs) to = null;
    }
    if (to !== undefined) body = withRecipient(claimed.payload, to);
    else {
      // Delivery cannot say now: the attempt waits (it is not the endpoint's failure, and counts for nothing).
      await repos.deliveries.updateOne(
        { _id: claimed._id, lease_until: claimed.lease_until },
        { $set: { lease_until: 0, next_attempt_at: deps.now() + RECIPIENT_RETRY_MS, updated_at: deps.now() } },
      );
      deps.logger.warn({ delivery_id: claimed._id }, "webhook waits: delivery did not give the email's recipient");
      return;
    }
  }
  const timestamp = Math.floor(deps.now() / 1000);
  const headers = {
    "webhook-id": claimed._id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(keys, claimed._id, timestamp, body),
  };
  const outcome = await deps.post(endpoint.url, headers, body);
  const at = deps.now();
  const record: AttemptRecord = { at, code: outcome.code, duration_ms: outcome.durationMs, error: outcome.error };
  const attempts = claimed.attempts + 1;
  const next = outcome.ok ? undefined : nextAttemptAt(deps.retry, attempts, claimed.retry_from, at);
  const state: DeliveryDoc["state"] = outcome.ok ? "delivered" : next === undefined ? "failed" : "pending";
  const recorded = await repos.deliveries.updateOne(
    { _id: claimed._id, lease_until: claimed.lease_until },
    {
      $set: {
        state,
        attempts,
        next_attempt_at: next ?? 0,
        lease_until: 0,
        last_code: outcome.code,
        last_duration_ms: outcome.durationMs,
        last_error: outcome.error,
        last_attempt_at: at,
        attempt_log: [...claimed.attempt_log, record].slice(-MAX_ATTEMPT_LOG),
        updated_at: at,
      },
    },
  );
  if (!recorded) {
    // This attempt outlived its lease and another sender has the delivery (or it was replayed or
    // deleted): that sender's record stands, and this late outcome counts for nothing.
    deps.logger.warn({ webhook_id: endpoint._id, delivery_id: claimed._id }, "webhook attempt outcome dropped: its lease ran out");
    return;
  }
  const outcomeLabel = state === "pending" ? "retry" : state;
  attemptsTotal.inc({ outcome: outcomeLabel, event_type: claimed.event_type });
  attemptSeconds.observe({ outcome: outcomeLabel }, outcome.durationMs / 1000);
  // Ids and codes only: the URL and the answer's body stay out of logs.
  deps.logger.info(
    { webhook_id: endpoint._id, delivery_id: claimed._id, event_type: claimed.event_type, attempt: attempts, code: outcome.code, state },
    outcome.ok ? "webhook delivered" : "webhook attempt failed",
  );
  await trackHealth(deps, repos, endpoint, outcome.ok, at);
}

/** How long an attempt waits when delivery cannot say who an email went to. */
const RECIPIENT_RETRY_MS = 5000;

function emailIdOf(payload: string): string | undefined {
  const id = (JSON.parse(payload) as { data?: { email_id?: unknown } }).data?.email_id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** The current secret's key, and the previous one's while it still signs. */
function signingKeys(deps: Deps, endpoint: EndpointDoc): Buffer[] {
  const open = (sealed: string) => secretKey(openSealed(deps.sealingKeys, SECRET_PURPOSE, sealed).toString("utf8"));
  const keys = [open(endpoint.secret_sealed)];
  if (endpoint.previous_secret_sealed && endpoint.previous_secret_expires_at > deps.now()) keys.push(open(endpoint.previous_secret_sealed));
  return keys;
}

/**
 * An endpoint's failing streak: set by its first failure after a success,
 * cleared by a success. One whose every attempt has failed for
 * `disableAfterMs` is turned off with a reason its GET shows.
 */
async function trackHealth(deps: Deps, repos: TenantRepositories, endpoint: EndpointDoc, ok: boolean, at: number): Promise<void> {
  if (ok) {
    if (endpoint.failing_since !== 0) await repos.endpoints.updateOne({ _id: endpoint._id }, { $set: { failing_since: 0 } });
    return;
  }
  if (endpoint.failing_since === 0) {
    await repos.endpoints.updateOne({ _id: endpoint._id, failing_since: 0 }, { $set: { failing_since: at } });
    return;
  }
  if (at - endpoint.failing_since < deps.disableAfterMs || !endpoint.is_active) return;
  const disabled = await repos.endpoints.updateOne(
    { _id: endpoint._id, is_active: true, failing_since: endpoint.failing_since },
    { $set: { is_active: false, disabled_reason: "failing", disabled_at: at, updated_at: at } },
  );
  if (disabled) deps.logger.warn({ webhook_id: endpoint._id, failing_for_s: Math.round((at - endpoint.failing_since) / 1000) }, "webhook endpoint disabled: every attempt failed");
}
