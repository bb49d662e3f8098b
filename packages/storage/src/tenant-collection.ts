import type { AnyFilter, Collection, Filter, FilteredUpdate, FindOptions, InsertManyResult, TenantDoc, Update, UpsertManyResult } from "./types.js";

/** A filter of a tenant's documents: `tenant` is the collection's business, never the caller's. */
export type TenantFilter<T extends TenantDoc> = Filter<Omit<T, "tenant">>;
/** An update of a tenant's documents: the tenant of a document never changes. */
export type TenantUpdate<T extends TenantDoc> = Update<Omit<T, "tenant">>;

/**
 * A collection seen through one tenant: every filter gets `tenant` added and
 * every inserted document is stamped with it; filters and updates cannot even
 * name `tenant`. Use cases only ever get these (built from the call's tenant,
 * or by a CrossTenantCollection where the tenant comes from data), so a query
 * that forgets the tenant cannot be written.
 */
export class TenantCollection<T extends TenantDoc> {
  constructor(
    private readonly collection: Collection<T>,
    readonly tenant: string,
  ) {
    if (typeof tenant !== "string" || tenant.length === 0) throw new TypeError("a tenant collection needs a tenant");
  }

  private scoped(filter: TenantFilter<T>): Filter<T> {
    return { ...(filter as AnyFilter), tenant: this.tenant } as Filter<T>;
  }

  insertOne(doc: Omit<T, "tenant">): Promise<void> {
    return this.collection.insertOne({ ...doc, tenant: this.tenant } as T);
  }
  /** See Collection.insertMany; every document is stamped with the tenant. */
  insertMany(docs: ReadonlyArray<Omit<T, "tenant">>): Promise<InsertManyResult> {
    return this.collection.insertMany(docs.map((doc) => ({ ...doc, tenant: this.tenant }) as T));
  }
  /** See Collection.upsertMany: by `_id` within the tenant; an `_id` of another tenant's document is a duplicate. */
  upsertMany(docs: ReadonlyArray<Omit<T, "tenant">>): Promise<UpsertManyResult> {
    return this.collection.upsertMany(
      docs.map((doc) => ({ ...doc, tenant: this.tenant }) as T),
      { tenant: this.tenant } as Filter<T>,
    );
  }
  findOne(filter: TenantFilter<T>): Promise<T | null> {
    return this.collection.findOne(this.scoped(filter));
  }
  find(filter: TenantFilter<T>, options?: FindOptions): Promise<T[]> {
    return this.collection.find(this.scoped(filter), options);
  }
  count(filter: TenantFilter<T>): Promise<number> {
    return this.collection.count(this.scoped(filter));
  }
  /** See Collection.countBy. */
  countBy(filter: TenantFilter<T>, field: keyof T & string): Promise<Map<string, number>> {
    return this.collection.countBy(this.scoped(filter), field);
  }
  updateOne(filter: TenantFilter<T>, update: TenantUpdate<T>): Promise<T | null> {
    return this.collection.updateOne(this.scoped(filter), update as Update<T>);
  }
  updateMany(filter: TenantFilter<T>, update: TenantUpdate<T>): Promise<number> {
    return this.collection.updateMany(this.scoped(filter), update as Update<T>);
  }
  /** See Collection.updateEach; every filter is scoped to the tenant. */
  updateEach(updates: ReadonlyArray<{ filter: TenantFilter<T>; update: TenantUpdate<T> }>): Promise<number[]> {
    return this.collection.updateEach(updates.map(({ filter, update }): FilteredUpdate<T> => ({ filter: this.scoped(filter), update: update as Update<T> })));
  }
  deleteOne(filter: TenantFilter<T>): Promise<boolean> {
    return this.collection.deleteOne(this.scoped(filter));
  }
  deleteMany(filter: TenantFilter<T>): Promise<number> {
    return this.collection.deleteMany(this.scoped(filter));
  }
  /**
   * See Collection.compact: after an erasure, so that what was deleted is gone
   * from the files too. It rewrites the whole collection (every tenant's
   * documents, unchanged); it reads and changes no data.
   */
  compact(): Promise<void> {
    return this.collection.compact();
  }
}

/**
 * The explicit capability to cross tenants, for the few pieces of work whose
 * tenant is not the caller's: a sweep over every tenant's documents (the outbox
 * relay's, delivery's stalled-mail sweep), or a consumer that learns the tenant
 * from an event. It reads across tenants (`find`, `count`) and hands out the
 * TenantCollection of a tenant named by data (`forTenant`); it never writes
 * across tenants. `purpose` says why the holder may cross them, so a reader
 * sees at a glance where tenancy is crossed and why; use cases never get one.
 */
export class CrossTenantCollection<T extends TenantDoc> {
  constructor(
    private readonly collection: Collection<T>,
    /** Why this holder works across tenants (for readers; never logged with data). */
    readonly purpose: string,
  ) {
    if (purpose.trim().length === 0) throw new TypeError("a cross-tenant collection must say why it crosses tenants");
  }

  /** The documents of one tenant, named by data (an event's meta, a swept document's `tenant`). */
  forTenant(tenant: string): TenantCollection<T> {
    return new TenantCollection(this.collection, tenant);
  }
  /** Documents of every tenant; each result carries its `tenant`. */
  find(filter: Filter<T>, options?: FindOptions): Promise<T[]> {
    return this.collection.find(filter, options);
  }
  /** How many documents of every tenant match (backlogs, metrics). */
  count(filter: Filter<T>): Promise<number> {
    return this.collection.count(filter);
  }
  /** See Collection.compact. */
  compact(): Promise<void> {
    return this.collection.compact();
  }
}
