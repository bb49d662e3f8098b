import type { Collection, Doc, Filter, FindOptions, UntypedFilter, Update } from "./types.js";

// Tenancy by types. A tenant is `<account id>:<mode>`; every document of a
// tenant's data starts with `tenant` and every index with it. Code meets a
// collection in one of three ways, each a type of its own, so that a reader
// sees where tenancy is kept and where it is crossed:
//
//  - TenantCollection: one tenant's documents. Its filters and updates cannot
//    name `tenant` (it adds it), so a query without the tenant cannot be
//    written. Use cases and consumers get only these.
//  - AnyTenant: the capability to open the TenantCollection of a tenant the
//    code learned from data rather than from the authenticated call (an event,
//    a document found by a sweep). Named, with the reason, where it is made.
//  - AcrossTenants: the capability to query all tenants at once (the outbox
//    sweep, delivery's stalled sweep). Named, with the reason, where it is made.
//
// A raw Collection stays in the service's wiring (server.ts) and its storage
// folder; nothing else holds one.

/** A document that belongs to a tenant. */
export interface TenantDoc extends Doc {
  /** `<account id>:<mode>` */
  tenant: string;
}

/** A document as a tenant's view sees it: its fields without `tenant`. */
export type Scoped<T extends TenantDoc> = Omit<T, "tenant">;

/**
 * A collection seen through one tenant: every filter gets `tenant` added and
 * every inserted document is stamped with it. Filters and updates are typed by
 * the document's fields other than `tenant`.
 */
export class TenantCollection<T extends TenantDoc> {
  constructor(
    private readonly collection: Collection<T>,
    readonly tenant: string,
  ) {
    if (!/^[^:\s]+:[^:\s]+$/.test(tenant)) throw new TypeError(`invalid tenant key ${JSON.stringify(tenant)}`);
  }

  private scoped(filter: Filter<Scoped<T>>): Filter<T> {
    // The tenant goes last, so that nothing in `filter` can replace it.
    return { ...(filter as UntypedFilter), tenant: this.tenant } as unknown as Filter<T>;
  }

  insertOne(doc: Scoped<T>): Promise<void> {
    return this.collection.insertOne({ ...doc, tenant: this.tenant } as T);
  }
  findOne(filter: Filter<Scoped<T>>): Promise<T | null> {
    return this.collection.findOne(this.scoped(filter));
  }
  find(filter: Filter<Scoped<T>>, options?: FindOptions): Promise<T[]> {
    return this.collection.find(this.scoped(filter), options);
  }
  count(filter: Filter<Scoped<T>>): Promise<number> {
    return this.collection.count(this.scoped(filter));
  }
  updateOne(filter: Filter<Scoped<T>>, update: Update<Scoped<T>>): Promise<T | null> {
    return this.collection.updateOne(this.scoped(filter), update as unknown as Update<T>);
  }
  deleteOne(filter: Filter<Scoped<T>>): Promise<boolean> {
    return this.collection.deleteOne(this.scoped(filter));
  }
  deleteMany(filter: Filter<Scoped<T>>): Promise<number> {
    return this.collection.deleteMany(this.scoped(filter));
  }
}

/**
 * The capability to open any tenant's view of a collection, for code that
 * learns the tenant from data: a consumer from its event's checked meta, an
 * outbox effect from the document it finishes. `why` says which, where the
 * capability is made.
 */
export class AnyTenant<T extends TenantDoc> {
  constructor(
    private readonly collection: Collection<T>,
    /** Why this code may open any tenant's documents (for readers; not used at run time). */
    readonly why: string,
  ) {}

  /** The documents of `tenant` (`<account id>:<mode>`). */
  of(tenant: string): TenantCollection<T> {
    return new TenantCollection(this.collection, tenant);
  }
}

/**
 * The capability to query every tenant's documents at once, for sweeps that
 * look for work wherever it is (each document they find still names its
 * tenant). `why` says which, where the capability is made.
 */
export class AcrossTenants<T extends TenantDoc> {
  constructor(
    private readonly collection: Collection<T>,
    /** Why this code may read and write across tenants (for readers; not used at run time). */
    readonly why: string,
  ) {}

  find(filter: Filter<T>, options?: FindOptions): Promise<T[]> {
    return this.collection.find(filter, options);
  }
  findOne(filter: Filter<T>): Promise<T | null> {
    return this.collection.findOne(filter);
  }
  count(filter: Filter<T>): Promise<number> {
    return this.collection.count(filter);
  }
  updateOne(filter: Filter<T>, update: Update<T>): Promise<T | null> {
    return this.collection.updateOne(filter, update);
  }
  deleteOne(filter: Filter<T>): Promise<boolean> {
    return this.collection.deleteOne(filter);
  }
}

