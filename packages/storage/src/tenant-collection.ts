import type { Collection, Doc, Filter, FindOptions, Update } from "./types.js";

/**
 * A collection seen through one tenant: every filter gets `tenant` added and
 * every inserted document is stamped with it. Use cases only ever get these,
 * so a query that forgets the tenant cannot be written.
 */
export class TenantCollection<T extends Doc & { tenant: string }> {
  constructor(
    private readonly collection: Collection<T>,
    readonly tenant: string,
  ) {}

  private scoped(filter: Filter): Filter {
    return { ...filter, tenant: this.tenant };
  }

  insertOne(doc: Omit<T, "tenant">): Promise<void> {
    return this.collection.insertOne({ ...doc, tenant: this.tenant } as T);
  }
  findOne(filter: Filter): Promise<T | null> {
    return this.collection.findOne(this.scoped(filter));
  }
  find(filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.collection.find(this.scoped(filter), options);
  }
  count(filter: Filter): Promise<number> {
    return this.collection.count(this.scoped(filter));
  }
  updateOne(filter: Filter, update: Update): Promise<T | null> {
    return this.collection.updateOne(this.scoped(filter), update);
  }
  deleteOne(filter: Filter): Promise<boolean> {
    return this.collection.deleteOne(this.scoped(filter));
  }
  deleteMany(filter: Filter): Promise<number> {
    return this.collection.deleteMany(this.scoped(filter));
  }
}
