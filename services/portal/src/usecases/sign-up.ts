import { createHash } from "node:crypto";
import { isIP } from "node:net";
import { ExpiringCache } from "@emailsvc/async";
import { AppError } from "@emailsvc/errors";
import { isId } from "@emailsvc/ids";
import { addressBucketId, type CounterStore, type Policy } from "@emailsvc/ratelimit";
import { DuplicateKeyError } from "@emailsvc/storage";
import type { Logger } from "@emailsvc/telemetry";
import type { CallContext } from "@emailsvc/tenancy";
import { createChallenge, verifySolution, type Challenge, type ChallengeSigner } from "../domain/proof-of-work.js";
import { HONEYPOT_FIELD, POW_FIELD, readSignup, type SignupFormView, type SignupRefusal, type SignupRequest } from "../domain/signup-form.js";
import type { FormStorage } from "../storage/forms.js";
import { formView } from "./forms.js";

// A post to a public signup form, from the refusals that cost nothing to the
// subscribers service's SignUp: the client's budget, the form, the honeypot,
// the proof of work, the fields, the challenge's single use, the address's
// and the form's budgets, then SignUp. What the person is told never depends on
// whether the address was known: SignUp's answer is the same either way, and
// every address takes the same path to it.

/** The subscribers service's SignUp (rpc/clients.ts). */
export interface SignUpPort {
  /** Throws SignUpRefused for a value the subscribers service refuses; anything else is the service being unavailable. */
  signUp(call: CallContext, request: SignupRequest & { consent: { text: string; version: string; sourceId: string }; audit: { source: "form"; ip: string; userAgent: string } }): Promise<void>;
}

/** The subscribers service refused a value (INVALID_ARGUMENT): a field the person can correct. */
export class SignUpRefused extends Error {
  constructor(readonly field: "email" | "tags" | "metadata" | "locale") {
    super(`the subscribers service refused ${field}`);
  }
}

export interface SignupLimits {
  /** Posts and challenges per client address (SIGNUP_RATE_IP), charged before the form is even looked up. */
  perIp: Policy;
  /** Signups per address asked for, per tenant (SIGNUP_RATE_ADDRESS). */
  perAddress: Policy;
  /** Signups per form (SIGNUP_RATE_FORM): a bound on what one form costs its account. */
  perForm: Policy;
}

export interface SignupDeps {
  storage: FormStorage;
  signer: ChallengeSigner;
  signUp: SignUpPort;
  counters: CounterStore;
  limits: SignupLimits;
  /** SIGNUP_POW_MAX_NUMBER: the challenge's number lies in [0, maxNumber] (the work a browser does, on average half). */
  pow: { maxNumber: number; ttlMs: number };
  logger: Logger;
  now: () => number;
}

/** A form as the public endpoint finds it: its settings and the tenant it belongs to. */
export interface PublicForm {
  tenant: { accountId: string; mode: "live" | "test" };
  form: SignupFormView;
}

export type SignupOutcome =
  | { kind: "accepted" }
  | { kind: "needs_proof_of_work"; challenge: Challenge }
  | { kind: "refused"; refusal: SignupRefusal; field?: string; retryAfterSeconds?: number };

/**
 * Forms by id across tenants, through a short cache (every post reads one).
 * A change made through this replica applies at once, one made through
 * another within `ttlMs`.
 */
export class PublicForms {
  private readonly cache: ExpiringCache<PublicForm | null>;

  constructor(
    private readonly storage: FormStorage,
    now: () => number,
    ttlMs = 30_000,
  ) {
    this.cache = new ExpiringCache(() => ttlMs, { maxEntries: 10_000, now });
  }

  forget(formId: string): void {
    this.cache.forget(formId);
  }

  async find(formId: string): Promise<PublicForm | null> {
    if (!isId("frm", formId)) return null;
    return this.cache.get(formId, async () => {
      const [doc] = await this.storage.byPublicId.find({ _id: formId }, { limit: 1 });
      if (!doc) return null;
      const [accountId, mode] = doc.tenant.split(":");
      if (!accountId || (mode !== "live" && mode !== "test")) return null;
      return { tenant: { accountId, mode }, form: formView(doc) };
    });
  }
}

/** Charges the client's budget; a refusal says when to try again. */
export async function chargeClient(deps: SignupDeps, ip: string): Promise<SignupOutcome | undefined> {
  const outcome = await deps.counters.consume([{ key: `signup:ip:${addressBucketId(ip)}`, policy: deps.limits.perIp }], deps.now());
  return outcome.allowed ? undefined : { kind: "refused", refusal: "rate_limited", retryAfterSeconds: Math.ceil(outcome.retryAfterMs / 1000) };
}

export function issueChallenge(deps: SignupDeps, form: SignupFormView): Challenge {
  return createChallenge(deps.signer, { formId: form.id, now: deps.now(), ttlMs: deps.pow.ttlMs, maxNumber: deps.pow.maxNumber });
}

/** Sweeps a tenant's expired challenges now and then (at most once a minute per replica and tenant). */
const lastSweep = new Map<string, number>();

/** Marks a solved challenge used; false when it was used before (a replay). */
async function useChallenge(deps: SignupDeps, tenant: string, challenge: string, expiresAt: number): Promise<boolean> {
  const used = deps.storage.forTenant(tenant).challenges;
  const now = deps.now();
  if ((lastSweep.get(tenant) ?? 0) < now - 60_000) {
    lastSweep.set(tenant, now);
    if (lastSweep.size > 10_000) lastSweep.clear();
    await used.deleteMany({ expires_at: { $lt: now } });
  }
  try {
    await used.insertOne({ _id: challenge, expires_at: expiresAt });
    return true;
  } catch (err) {
    if (err instanceof DuplicateKeyError) return false;
    throw err;
  }
}

/**
 * A post's fields, from a client whose budget and origin were checked:
 * accepted (also when the honeypot is filled, then nothing is stored), sent
 * back for a proof of work, or refused.
 */
export async function submitSignup(
  deps: SignupDeps,
  found: PublicForm,
  post: URLSearchParams,
  client: { ip: string; userAgent: string },
): Promise<SignupOutcome> {
  const { form } = found;
  // A person never sees the honeypot; a bot that fills it is told it worked and nothing happens.
  if ((post.get(HONEYPOT_FIELD) ?? "") !== "") return { kind: "accepted" };
  const solution = post.get(POW_FIELD) ?? "";
  if (solution === "") return { kind: "needs_proof_of_work", challenge: issueChallenge(deps, form) };
  const verdict = verifySolution(deps.signer, solution, form.id, deps.now());
  if (!verdict.ok) return { kind: "refused", refusal: "proof_of_work_failed" };
  const read = readSignup(form, post);
  if (!read.ok) return { kind: "refused", refusal: read.refusal, field: read.field };
  const { signup } = read;
  const tenant = `${found.tenant.accountId}:${found.tenant.mode}`;
  // Used once only, before anything is counted or stored: a replay changes nothing and spends no one's budget.
  if (!(await useChallenge(deps, tenant, verdict.challenge, verdict.expiresAt))) return { kind: "refused", refusal: "proof_of_work_failed" };
  // Hashed keys: the counters hold no address.
  const addressKey = createHash("sha256").update(`${tenant}\n${signup.email.toLowerCase()}`).digest("base64url").slice(0, 22);
  const budget = await deps.counters.consume(
    [
      { key: `signup:address:${addressKey}`, policy: deps.limits.perAddress },
      { key: `signup:form:${form.id}`, policy: deps.limits.perForm },
    ],
    deps.now(),
  );
  if (!budget.allowed) return { kind: "refused", refusal: "rate_limited", retryAfterSeconds: Math.ceil(budget.retryAfterMs / 1000) };
  const call: CallContext = { tenant: found.tenant, actor: "form", requestId: "" };
  try {
    await deps.signUp.signUp(call, {
      ...signup,
      consent: { text: form.consentText, version: form.consentVersion, sourceId: form.id },
      // An address the edge could not tell ("unknown") is left out rather than refused.
      audit: { source: "form", ip: isIP(client.ip) ? client.ip : "", userAgent: client.userAgent.slice(0, 512) },
    });
  } catch (err) {
    if (err instanceof SignUpRefused) return { kind: "refused", refusal: err.field === "email" ? "invalid_email" : "invalid_field", field: err.field };
    // Ids and the error's code only: the address stays out of the log.
    deps.logger.warn({ form_id: form.id, account_id: found.tenant.accountId, code: err instanceof AppError ? err.code : "internal" }, "signup not passed on");
    return { kind: "refused", refusal: "unavailable" };
  }
  return { kind: "accepted" };
}
