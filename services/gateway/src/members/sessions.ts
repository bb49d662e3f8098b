import { sha256Hex } from "../accounts/secrets.js";
import type { Member, MemberStore, Session } from "./store.js";

/** The cookie of a dashboard session: `__Host-` where the API is served over https (Secure, no Domain, Path=/). */
export function sessionCookieName(secure: boolean): string {
  return secure ? "__Host-emailsvc_session" : "emailsvc_session";
}

/** Whether cookies must be Secure: the API's public address is https (PUBLIC_API_URL). */
export function isSecureUrl(publicUrl: string | undefined): boolean {
  return publicUrl !== undefined && /^https:/i.test(publicUrl);
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export interface LiveSession {
  session: Session;
  member: Member;
}

interface Entry {
  value: LiveSession;
  expiresAt: number;
}

/**
 * Turns a session cookie into its session and member. Every request asks the
 * store, or a cache of at most 2 s (by the token's hash): a member removed
 * or signed out on this instance is forgotten at once, on another instance
 * within those 2 s. Unknown tokens are not cached.
 */
export class SessionAuthenticator {
  private readonly cache = new Map<string, Entry>();

  constructor(
    private readonly members: MemberStore,
    private readonly options: { ttlMs?: number; maxEntries?: number; now?: () => number } = {},
  ) {}

  async authenticate(token: string): Promise<LiveSession | undefined> {
    if (!TOKEN_SHAPE.test(token)) return undefined;
    const now = (this.options.now ?? Date.now)();
    const hash = sha256Hex(token);
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAt > now) return cached.value;
    this.cache.delete(hash);
    const value = await this.members.sessionByToken(token);
    if (!value) return undefined;
    if (this.cache.size >= (this.options.maxEntries ?? 10_000)) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(hash, { value, expiresAt: now + Math.min(this.options.ttlMs ?? 2000, 2000) });
    return value;
  }

  /** The member changed (removed, role, password, signed out everywhere): their sessions are read again. */
  forgetMember(memberId: string): void {
    for (const [hash, entry] of this.cache) if (entry.value.member.id === memberId) this.cache.delete(hash);
  }

  forgetSession(sessionId: string): void {
    for (const [hash, entry] of this.cache) if (entry.value.session.id === sessionId) this.cache.delete(hash);
  }
}
