import type { DocumentStore } from "@emailsvc/storage";
import { AccountStore } from "./store.js";
import { newAdminToken, sha256Hex } from "./secrets.js";
import { MemberStore } from "../members/store.js";

/** Credentials made by the development bootstrap; shown once, stored only as hashes. */
export interface DevelopmentCredentials {
  /** The operator token for /admin/v1 (its hash is stored, so it keeps working on later starts). */
  adminToken: string;
  /** The "Development" account. */
  accountId: string;
  /** A test-mode API key of that account. */
  testKey: string;
  /**
   * The account's setup invitation (role owner, no address: whoever opens
   * it chooses their email, name and password): the dashboard's page, the
   * token after `#` so that it reaches no server log nor Referer.
   */
  setupUrl: string;
}

/**
 * First-start set-up of `npm start` when no ADMIN_TOKEN is configured: on a
 * store without accounts it creates an admin token (hash stored), the account
 * "Development" (plan professional), a test-mode key and the dashboard's
 * setup invitation (an owner's, 7 days), and returns them so
 * that the launcher prints them once. Once an account exists it returns
 * undefined: nothing new is made and the stored admin-token hash keeps working.
 *
 * A store that already has accounts but no stored admin token (it was used with
 * ADMIN_TOKEN) gets nothing: its operator sets ADMIN_TOKEN again.
 */
export async function bootstrapDevelopment(
  store: DocumentStore,
  options: { now?: () => Date; publicUrl?: string } = {},
): Promise<DevelopmentCredentials | undefined> {
  const accounts = new AccountStore(store, options.now);
  await accounts.ensureIndexes();
  if (await accounts.hasAnyAccount()) return undefined;
  // The token first: should the start fail before the account exists, the
  // next start finds no account and replaces the token no one has seen.
  const adminToken = newAdminToken();
  await accounts.setAdminTokenHash(sha256Hex(adminToken));
  const account = await accounts.createAccount({ name: "Development", plan: "professional" });
  const key = await accounts.createApiKey(account.id, { mode: "test", name: "Development test key" });
  const members = new MemberStore(store, options.now);
  await members.ensureIndexes();
  const { token } = await members.createInvitation({ accountId: account.id, email: null, role: "owner", invitedBy: null });
  const base = (options.publicUrl ?? "http://localhost:8080").replace(/\/+$/, "");
  return { adminToken, accountId: account.id, testKey: key.key, setupUrl: `${base}/dashboard/setup#token=${token}` };
}
