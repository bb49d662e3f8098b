import type { KeyIdentity } from "../http/state.js";
import type { AccountStore } from "./store.js";
import { parseApiKey, secretMatchesHash, sha256Hex } from "./secrets.js";

export interface KeyCacheOptions {
  /**
   * How long a successful lookup is reused. A key revoked through another
   * gateway instance keeps working here for at most this long; the instance
   * that revokes it forgets it at once. Default 5 s.
   */
  ttlMs?: number;
  /** Most keys remembered; the oldest entry goes first. Default 10 000. */
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  identity: KeyIdentity;
  expiresAt: number;
}

/**
 * Turns an `X-API-Key` value into the caller's identity. The gateway sits on
 * every call, so valid keys are cached briefly (by hash, never by the key);
 * unknown keys are not cached, so guessing cannot fill the cache.
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly accounts: AccountStore,
    options: KeyCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 5000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The identity of a valid, unrevoked key; undefined otherwise. */
  async authenticate(presented: string): Promise<KeyIdentity | undefined> {
    const shape = parseApiKey(presented);
    if (!shape) return undefined;
    const hash = sha256Hex(presented);
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAt > this.now()) return cached.identity;
    if (cached) this.cache.delete(hash);

    const key = await this.accounts.findApiKeyByHash(hash);
    // The lookup was by hash equality; the mode in the key's prefix must also
    // be the stored one (it is, unless the document was edited by hand).
    if (!key || key.revokedAt !== null || key.mode !== shape.mode) return undefined;
    const identity: KeyIdentity = { accountId: key.accountId, mode: key.mode, keyId: key.id };
    if (this.cache.size >= this.maxEntries) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(hash, { identity, expiresAt: this.now() + this.ttlMs });
    return identity;
  }

  /** Drops a key from the cache (after revocation on this instance). */
  forget(hash: string): void {
    this.cache.delete(hash);
  }

  clear(): void {
    this.cache.clear();
  }
}

/**
 * Checks the operator token. With ADMIN_TOKEN configured only that token works;
 * without it, the token whose hash the development bootstrap stored.
 */
export class AdminTokenVerifier {
  private readonly configuredHash: string | undefined;

  constructor(
    private readonly accounts: AccountStore,
    configuredToken?: string,
  ) {
    this.configuredHash = configuredToken ? sha256Hex(configuredToken) : undefined;
  }

  async verify(presented: string): Promise<boolean> {
    // Admin calls are rare: the stored hash is read each time, so a token
    // stored by another instance works at once.
    const expected = this.configuredHash ?? (await this.accounts.adminTokenHash());
    return expected !== undefined && secretMatchesHash(presented, expected);
  }
}
