import { TenantCollection, type TenantDoc } from "./tenant-collection.js";
import type { Collection, Doc, DocumentStore, IndexSpec } from "./types.js";

/** One collection of a service: its name, the documents it holds, and the indexes its queries need. */
export interface CollectionSpec<T extends Doc> {
  readonly name: string;
  readonly indexes: readonly IndexSpec[];
  /** Never set: it only carries the document type. */
  readonly doc?: T;
}

export function collectionSpec<T extends Doc>(name: string, indexes: readonly IndexSpec[]): CollectionSpec<T> {
  return { name, indexes };
}

type Specs = Record<string, CollectionSpec<Doc>>;
type DocOf<S> = S extends CollectionSpec<infer T> ? T : never;

/** The opened collections of a set, by the set's names. */
export type CollectionsOf<S extends Specs> = { [K in keyof S]: Collection<DocOf<S[K]>> };

/** One tenant's views of a set's collections (each of tenant documents). */
export type RepositoriesOf<S extends Specs> = {
  [K in keyof S]: DocOf<S[K]> extends TenantDoc ? TenantCollection<DocOf<S[K]>> : never;
};

/**
 * A service's collections, declared once: `open` them (indexes made sure of, at
 * every start) where the service is wired, and hand its use cases one
 * tenant's repositories (`forTenant`) and nothing else.
 */
export interface CollectionSet<S extends Specs> {
  readonly specs: S;
  open(store: DocumentStore): Promise<CollectionsOf<S>>;
  forTenant(collections: CollectionsOf<S>, tenant: string): RepositoriesOf<S>;
}

export function collectionSet<S extends Specs>(specs: S): CollectionSet<S> {
  const names = Object.keys(specs) as Array<keyof S & string>;
  return {
    specs,
    async open(store) {
      const collections = {} as Record<string, Collection<Doc>>;
      for (const key of names) collections[key] = store.collection(specs[key]!.name);
      await Promise.all(names.map((key) => collections[key]!.createIndexes(specs[key]!.indexes)));
      return collections as unknown as CollectionsOf<S>;
    },
    forTenant(collections, tenant) {
      const repositories = {} as Record<string, TenantCollection<TenantDoc>>;
      for (const key of names) repositories[key] = new TenantCollection(collections[key] as unknown as Collection<TenantDoc>, tenant);
      return repositories as unknown as RepositoriesOf<S>;
    },
  };
}
