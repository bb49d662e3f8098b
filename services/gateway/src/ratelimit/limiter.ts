import { createHash } from "node:crypto";
import type { Logger } from "@emailsvc/runtime";
import { toMicros, type GcraResult } from "./gcra.js";
import { budgetsOf, type Budget, type KeyKind, type RateClass, type RateLimitPolicy } from "./policy.js";
import type { CounterStore } from "./store.js";

/** The keys a request has: its API key id, its tenant (`<account id>:<mode>`), its client address. */
export type RateKeys = Partial<Record<KeyKind, string>>;

/** One budget's answer. */
export interface BudgetState extends GcraResult {
  budget: Budget;
}

export interface RateDecision {
  allowed: boolean;
  /** Every budget of the class, in policy order (empty when none applies, e.g. limits off). */
  budgets: BudgetState[];
  /**
   * The budget that decided: when refused, the refusing one with the longest
   * wait; when admitted, the one closest to running out. What the RateLimit-*
   * headers describe.
   */
  binding: BudgetState | undefined;
}

export interface RateLimiterOptions {
  /** The clock, in ms (tests inject one); default Date.now. */
  now?: () => number;
  /** Told when a refund fails (never a key). */
  logger?: Logger;
}

/**
 * Applies a policy with a counter store. A request takes one unit from every
 * budget of its class, all or nothing: when one budget refuses, the units the
 * others took are given back. The budgets are asked at the same time (one
 * round trip of latency on a shared store, not one per budget), after a look
 * at what this replica already knows, so that a request refused by one budget
 * touches no other and, on the shared store, often no store at all.
 *
 * Counter ids are `<class>.<kind>.<digest of the key>`: fixed length whatever
 * the key, and no API key id, account or client address is written to the
 * store as such.
 */
export class RateLimiter {
  private readonly now: () => number;
  private readonly logger: Logger | undefined;

  constructor(
    readonly policy: RateLimitPolicy,
    readonly store: CounterStore,
    options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
    const seen = new Set<string>();
    for (const budget of policy.budgets) {
      const name = `${budget.rateClass}/${budget.kind}`;
      if (seen.has(name)) throw new Error(`two budgets for ${name}`);
      seen.add(name);
      if (!Number.isInteger(budget.limit) || budget.limit < 1) throw new Error(`budget ${name}: limit must be a positive integer`);
      if (!Number.isInteger(budget.windowMs / 1000) || budget.windowMs < 1000) {
        throw new Error(`budget ${name}: the window must be a whole number of seconds`);
      }
    }
  }

  /** Whether any budget is in force (false with RATE_LIMITS=off). */
  get enabled(): boolean {
    return this.policy.budgets.length > 0;
  }

  budgets(rateClass: RateClass): Budget[] {
    return budgetsOf(this.policy, rateClass);
  }

  /** Takes one unit from each budget of the class, if all of them allow it. */
  async consume(rateClass: RateClass, keys: RateKeys): Promise<RateDecision> {
    const targets = this.targets(rateClass, keys);
    if (targets.length === 0) return { allowed: true, budgets: [], binding: undefined };
    const now = toMicros(this.now());
    const seen = await Promise.all(targets.map((t) => this.store.peek(t.id, t.budget, now)));
    if (seen.some((state) => !state.allowed)) return decision(targets, seen);

    const taken = await Promise.all(targets.map((t) => this.store.consume(t.id, t.budget, now)));
    if (taken.every((state) => state.allowed)) return decision(targets, taken);
    // Refused by one budget: the others give their unit back, and report
    // what they had before this request.
    await Promise.all(
      targets.map(async (t, i) => {
        if (!taken[i]!.allowed) return;
        try {
          await this.store.refund(t.id, t.budget, now);
        } catch (err) {
          this.logger?.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, "rate-limit refund failed");
        }
      }),
    );
    return decision(
      targets,
      taken.map((state, i) => (state.allowed ? seen[i]! : state)),
    );
  }

  /**
   * Takes one unit from each budget of the class even when none is left: for
   * something that has already happened (a failed authentication). The budget
   * then stays refused for longer; `peek` tells whether to let the next one try.
   */
  async charge(rateClass: RateClass, keys: RateKeys): Promise<RateDecision> {
    const targets = this.targets(rateClass, keys);
    if (targets.length === 0) return { allowed: true, budgets: [], binding: undefined };
    const now = toMicros(this.now());
    const states = await Promise.all(targets.map((t) => this.store.consume(t.id, t.budget, now, { force: true })));
    // Charged, but whether the next request would pass is what callers want to know.
    const after = await Promise.all(targets.map((t) => this.store.peek(t.id, t.budget, now)));
    return decision(
      targets,
      states.map((state, i) => ({ ...state, allowed: after[i]!.allowed, retryAfterMs: after[i]!.retryAfterMs })),
    );
  }

  /** Whether a request of the class would be admitted now, taking nothing. */
  async peek(rateClass: RateClass, keys: RateKeys): Promise<RateDecision> {
    const targets = this.targets(rateClass, keys);
    if (targets.length === 0) return { allowed: true, budgets: [], binding: undefined };
    const now = toMicros(this.now());
    return decision(targets, await Promise.all(targets.map((t) => this.store.peek(t.id, t.budget, now))));
  }

  /** Stops the store's background work. */
  close(): Promise<void> {
    return this.store.close();
  }

  private targets(rateClass: RateClass, keys: RateKeys): Array<{ budget: Budget; id: string }> {
    return this.budgets(rateClass).map((budget) => {
      const key = keys[budget.kind];
      // A budget of the policy without its key is a wiring mistake, not a
      // request to let through unlimited.
      if (key === undefined || key === "") throw new Error(`rate limit ${rateClass}/${budget.kind}: no ${budget.kind} key given`);
      return { budget, id: counterId(budget, key) };
    });
  }
}

/** `<class>.<kind>.<22 base64url characters of SHA-256 of the key>`. */
export function counterId(budget: Budget, key: string): string {
  const digest = createHash("sha256").update(key).digest("base64url").slice(0, 22);
  return `${budget.rateClass}.${budget.kind}.${digest}`;
}

function decision(targets: Array<{ budget: Budget }>, results: GcraResult[]): RateDecision {
  const budgets = results.map((result, i) => ({ ...result, budget: targets[i]!.budget }));
  const refused = budgets.filter((state) => !state.allowed);
  const binding =
    refused.length > 0
      ? refused.reduce((a, b) => (b.retryAfterMs > a.retryAfterMs ? b : a))
      : budgets.reduce((a, b) => (b.remaining < a.remaining || (b.remaining === a.remaining && b.resetMs > a.resetMs) ? b : a));
  return { allowed: refused.length === 0, budgets, binding };
}
