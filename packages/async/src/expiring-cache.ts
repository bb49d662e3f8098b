// Answers read from another service or a store, kept in memory for a short
// while per key: a portal's frame-ancestors per tenant, which account an
// active custom domain serves, a tenant's preference-link base. One
// mechanism for them all: bounded (emptied past maxEntries, so made-up keys
// cannot grow it), concurrent loads of one key shared, each value kept as
// long as its own ttl says (a miss or a failure may be kept less long).

export interface ExpiringCacheOptions {
  /** Keys kept at most; past it the cache is emptied (default 10,000). */
  maxEntries?: number;
  now?: () => number;
}

export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private readonly loading = new Map<string, Promise<V>>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    /** How long a value is kept, ms. */
    private readonly ttlMs: (value: V) => number,
    options: ExpiringCacheOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The value kept for `key`, else `load()`'s (one load at a time per key), kept for ttlMs(value). */
  get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.until > this.now()) return Promise.resolve(hit.value);
    const running = this.loading.get(key);
    if (running) return running;
    const loaded = load()
      .then((value) => {
        if (this.entries.size >= this.maxEntries) this.entries.clear();
        this.entries.set(key, { value, until: this.now() + this.ttlMs(value) });
        return value;
      })
      .finally(() => this.loading.delete(key));
    this.loading.set(key, loaded);
    return loaded;
  }

  /** Drops `key`: the next get loads it again (this process changed it). */
  forget(key: string): void {
    this.entries.delete(key);
  }
}
