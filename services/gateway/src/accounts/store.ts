import { isId, newId } from "@emailsvc/ids";
import { type KeyMode } from "@emailsvc/tenancy";
import { DuplicateKeyError, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import { maskApiKey, newApiKey, sha256Hex } from "./secrets.js";

// Accounts and API keys live in the gateway's own database (DESIGN.md: each
// service owns its data). Timestamps are stored as RFC 3339 strings: they sort
// as strings and read back the same from MongoDB and the embedded store.

export type Plan = "starter" | "professional";

export interface Account {
  id: string;
  name: string;
  plan: Plan;
  createdAt: string;
}

export interface ApiKey {
  id: string;
  accountId: string;
  mode: KeyMode;
  name: string | null;
  masked: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

interface AccountDoc extends Doc {
  name: string;
  plan: Plan;
  created_at: string;
}

interface ApiKeyDoc extends Doc {
  account_id: string;
  mode: KeyMode;
  name: string | null;
  /** SHA-256 (hex) of the full key; the key itself is never stored. */
  hash: string;
  last4: string;
  created_at: string;
  revoked_at: string | null;
}

interface SettingDoc extends Doc {
  hash: string;
  created_at: string;
}

/** Fixed `_id` of the stored admin-token hash (development bootstrap). */
const ADMIN_TOKEN_SETTING = "admin_token";

export class InvalidCursorError extends Error {}
export class AccountNotFoundError extends Error {}

export class AccountStore {
  private readonly accounts: Collection<AccountDoc>;
  private readonly keys: Collection<ApiKeyDoc>;
  private readonly settings: Collection<SettingDoc>;

  constructor(
    store: DocumentStore,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.accounts = store.collection<AccountDoc>("accounts");
    this.keys = store.collection<ApiKeyDoc>("api_keys");
    this.settings = store.collection<SettingDoc>("settings");
  }

  /** Idempotent; called at every start. Accounts are read by `_id` only. */
  async ensureIndexes(): Promise<void> {
    await this.keys.createIndexes([
      // Authentication: findOne({ hash }) on every uncached API call.
      { name: "hash_unique", fields: { hash: 1 }, unique: true },
      // Key list of an account: find({ account_id, _id > cursor }) sorted by _id.
      { name: "account_id_id", fields: { account_id: 1, _id: 1 } },
    ]);
  }

  async createAccount(input: { name: string; plan: Plan }): Promise<Account> {
    const doc: AccountDoc = { _id: newId("acc"), name: input.name, plan: input.plan, created_at: this.timestamp() };
    await this.accounts.insertOne(doc);
    return toAccount(doc);
  }

  async getAccount(id: string): Promise<Account | undefined> {
    if (!isId("acc", id)) return undefined;
    const doc = await this.accounts.findOne({ _id: id });
    return doc ? toAccount(doc) : undefined;
  }

  async hasAnyAccount(): Promise<boolean> {
    return (await this.accounts.find({}, { limit: 1 })).length > 0;
  }

  async listAccounts(limit: number, cursor?: string): Promise<Page<Account>> {
    const after = decodeCursor(cursor, "acc");
    const docs = await this.accounts.find(after ? { _id: { $gt: after } } : {}, { sort: { _id: 1 }, limit: limit + 1 });
    return toPage(docs, limit, toAccount);
  }

  /** Creates a key; returns it with the full secret, which is not kept. */
  async createApiKey(accountId: string, input: { mode: KeyMode; name?: string }): Promise<ApiKey & { key: string }> {
    if (!(await this.getAccount(accountId))) throw new AccountNotFoundError(accountId);
    const key = newApiKey(input.mode);
    const doc: ApiKeyDoc = {
      _id: newId("key"),
      account_id: accountId,
      mode: input.mode,
      name: input.name ?? null,
      hash: sha256Hex(key),
      last4: key.slice(-4),
      created_at: this.timestamp(),
      revoked_at: null,
    };
    await this.keys.insertOne(doc);
    return { ...toApiKey(doc), key };
  }

  async listApiKeys(accountId: string, limit: number, cursor?: string): Promise<Page<ApiKey>> {
    if (!(await this.getAccount(accountId))) throw new AccountNotFoundError(accountId);
    const after = decodeCursor(cursor, "key");
    const filter = after ? { account_id: accountId, _id: { $gt: after } } : { account_id: accountId };
    const docs = await this.keys.find(filter, { sort: { _id: 1 }, limit: limit + 1 });
    return toPage(docs, limit, toApiKey);
  }

  /**
   * Revokes a key of the account; revoking a revoked key keeps its first
   * revocation time. Returns the key and its hash (to drop it from caches), or
   * undefined when the account has no such key.
   */
  async revokeApiKey(accountId: string, keyId: string): Promise<{ key: ApiKey; hash: string } | undefined> {
    const updated = await this.keys.updateOne(
      { _id: keyId, account_id: accountId, revoked_at: null },
      { $set: { revoked_at: this.timestamp() } },
    );
    const doc = updated ?? (await this.keys.findOne({ _id: keyId, account_id: accountId }));
    return doc ? { key: toApiKey(doc), hash: doc.hash } : undefined;
  }

  /** The key stored under this hash, if any (revoked or not). */
  async findApiKeyByHash(hash: string): Promise<ApiKey | undefined> {
    const doc = await this.keys.findOne({ hash });
    return doc ? toApiKey(doc) : undefined;
  }

  async adminTokenHash(): Promise<string | undefined> {
    return (await this.settings.findOne({ _id: ADMIN_TOKEN_SETTING }))?.hash;
  }

  /** Stores the admin-token hash, replacing a previous one. */
  async setAdminTokenHash(hash: string): Promise<void> {
    const replaced = await this.settings.updateOne({ _id: ADMIN_TOKEN_SETTING }, { $set: { hash, created_at: this.timestamp() } });
    if (replaced) return;
    try {
      await this.settings.insertOne({ _id: ADMIN_TOKEN_SETTING, hash, created_at: this.timestamp() });
    } catch (err) {
      // Another process stored one between the two calls: ours replaces it.
      if (!(err instanceof DuplicateKeyError)) throw err;
      await this.settings.updateOne({ _id: ADMIN_TOKEN_SETTING }, { $set: { hash, created_at: this.timestamp() } });
    }
  }

  private timestamp(): string {
    return this.now().toISOString();
  }
}

function toAccount(doc: AccountDoc): Account {
  return { id: doc._id, name: doc.name, plan: doc.plan, createdAt: doc.created_at };
}

function toApiKey(doc: ApiKeyDoc): ApiKey {
  return {
    id: doc._id,
    accountId: doc.account_id,
    mode: doc.mode,
    name: doc.name,
    masked: maskApiKey(doc.mode, doc.last4),
    createdAt: doc.created_at,
    revokedAt: doc.revoked_at,
  };
}

function toPage<D extends Doc, T>(docs: D[], limit: number, map: (doc: D) => T): Page<T> {
  const items = docs.slice(0, limit);
  const last = items[items.length - 1];
  return { items: items.map(map), nextCursor: docs.length > limit && last ? encodeCursor(last._id) : null };
}

// Cursors are opaque to clients (base64url of the last id): they may change
// shape later without breaking anyone. A cursor that does not decode to an id
// of the listed kind was made up or altered.
function encodeCursor(id: string): string {
  return Buffer.from(id, "utf8").toString("base64url");
}

function decodeCursor(cursor: string | undefined, prefix: string): string | undefined {
  if (cursor === undefined) return undefined;
  const id = Buffer.from(cursor, "base64url").toString("utf8");
  if (!isId(prefix, id) || encodeCursor(id) !== cursor) throw new InvalidCursorError();
  return id;
}
