// @emailsvc/storage: the document-store port and its two adapters.

import * as path from "node:path";
import { openEmbeddedStore } from "./embedded.js";
import type * as Mongo from "./mongo.js";
import type { DocumentStore } from "./types.js";

export * from "./types.js";
export { EmbeddedDocumentStore, openEmbeddedStore, type EmbeddedStoreOptions } from "./embedded.js";
export type { MongoDocumentStore, MongoStoreOptions } from "./mongo.js";
export { redactUrl } from "./redact-url.js";
export { readFileIfPresent, tenantFilePath, writeFileWhole } from "./tenant-files.js";

export interface OpenStoreOptions {
  /** When set (the `MONGO_URL` setting), the store is this MongoDB server. */
  mongoUrl?: string | undefined;
  /** Root of the embedded stores (`DATA_DIR`); memory only when undefined too. */
  dataDir?: string | undefined;
  /** The service's database: a MongoDB database, or a directory under `dataDir`. */
  dbName: string;
}

/**
 * The MongoDB adapter, loaded on first use: the driver costs every thread
 * that loads it about 18 MB of buffers and 6 MB of heap, which the embedded
 * store (`npm start`'s default) has no use for.
 */
function mongo(): typeof Mongo {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (above)
  return require("./mongo.js") as typeof Mongo;
}

/** A store on the MongoDB server at `options.url` (mongo.ts). */
export function openMongoStore(options: Mongo.MongoStoreOptions): Promise<Mongo.MongoDocumentStore> {
  return mongo().openMongoStore(options);
}

/** MongoDB when a URL is given, else the embedded store under `dataDir/dbName`. */
export function openStore(options: OpenStoreOptions): Promise<DocumentStore> {
  if (options.mongoUrl !== undefined && options.mongoUrl !== "") {
    return openMongoStore({ url: options.mongoUrl, dbName: options.dbName });
  }
  if (!/^[A-Za-z0-9_-]+$/.test(options.dbName)) {
    return Promise.reject(new TypeError(`invalid database name ${options.dbName}`));
  }
  return openEmbeddedStore({
    dataDir: options.dataDir === undefined ? undefined : path.join(options.dataDir, options.dbName),
  });
}
export { CrossTenantCollection, TenantCollection, type TenantFilter, type TenantUpdate } from "./tenant-collection.js";
