import type { Account } from "../../accounts/store.js";
import { sessionExpiresAt, type Member, type Session } from "../../members/store.js";

export const sessionJson = (session: Session, member: Member, account: Account) => ({
  member: { id: member.id, email: member.email, name: member.name, role: member.role },
  account: { id: account.id, name: account.name, plan: account.plan },
  csrf_token: session.csrfToken,
  expires_at: sessionExpiresAt(session),
});
