import type { Account, ApiKey, Page } from "../../accounts/store.js";

// The gateway's own accounts and keys -> the admin API's JSON.

export const accountJson = (a: Account) => ({ id: a.id, name: a.name, plan: a.plan, created_at: a.createdAt });
export const apiKeyJson = (k: ApiKey) => ({
  id: k.id,
  account_id: k.accountId,
  mode: k.mode,
  name: k.name,
  masked: k.masked,
  created_at: k.createdAt,
  revoked_at: k.revokedAt,
});
export const pageJson = <T, J>(page: Page<T>, map: (item: T) => J) => ({ items: page.items.map(map), next_cursor: page.nextCursor });
