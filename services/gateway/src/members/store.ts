import { randomBytes } from "node:crypto";
import { isId, newId } from "@emailsvc/ids";
import { DuplicateKeyError, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import { sha256Hex } from "../accounts/secrets.js";
import type { Role } from "./roles.js";

// An account's members, their dashboard sessions, invitations and password
// resets, in the gateway's own database beside accounts and keys. Secrets
// that arrive by cookie or link (session tokens, invitation and reset
// tokens) are 32 random bytes, stored as their SHA-256 only: a copy of the
// database opens nothing. An email address belongs to one member of one
// account (sign-in asks for no account): it is stored lower-cased, unique.

export interface Member {
  id: string;
  accountId: string;
  email: string;
  name: string;
  role: Role;
  passwordHash: string;
  createdAt: string;
}

export interface Session {
  id: string;
  memberId: string;
  accountId: string;
  csrfToken: string;
  createdAt: string;
  lastSeenAt: string;
  /** When the session ends at the latest (7 days after sign-in). */
  absoluteExpiresAt: string;
  ip: string;
  userAgent: string;
}

export interface Invitation {
  id: string;
  accountId: string;
  /** null: the setup invitation, whose taker chooses the address. */
  email: string | null;
  role: Role;
  invitedBy: string | null;
  createdAt: string;
  expiresAt: string;
  acceptedAt: string | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** How long a session lasts: 12 h after its last use, 7 days after sign-in at most. */
export const SESSION_IDLE_MS = 12 * 3_600_000;
export const SESSION_ABSOLUTE_MS = 7 * 24 * 3_600_000;
/** How long an invitation's link works. */
export const INVITATION_TTL_MS = 7 * 24 * 3_600_000;
/** How long a password reset's link works: it opens an account, so an hour. */
export const PASSWORD_RESET_TTL_MS = 3_600_000;
/** A session's last use is written at most this often (not on every request). */
const TOUCH_EVERY_MS = 60_000;

interface MemberDoc extends Doc {
  account_id: string;
  email: string;
  name: string;
  role: Role;
  password_hash: string;
  created_at: string;
}

interface SessionDoc extends Doc {
  /** SHA-256 (hex) of the cookie's token. */
  hash: string;
  member_id: string;
  account_id: string;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ip: string;
  user_agent: string;
}

interface InvitationDoc extends Doc {
  account_id: string;
  email: string | null;
  role: Role;
  hash: string;
  invited_by: string | null;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
}

interface ResetDoc extends Doc {
  member_id: string;
  hash: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export class MemberEmailTakenError extends Error {}
export class InvalidCursorError extends Error {}

/** A new secret for a cookie or a link: 32 random bytes, base64url. */
export function newSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** An address as members are looked up by. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export class MemberStore {
  private readonly members: Collection<MemberDoc>;
  private readonly sessions: Collection<SessionDoc>;
  private readonly invitations: Collection<InvitationDoc>;
  private readonly resets: Collection<ResetDoc>;
  /** The members' passkeys (passkeys.ts), removed with their member. */
  private readonly passkeys: Collection<Doc & { member_id: string }>;

  constructor(
    store: DocumentStore,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.members = store.collection<MemberDoc>("members");
    this.sessions = store.collection<SessionDoc>("sessions");
    this.invitations = store.collection<InvitationDoc>("invitations");
    this.resets = store.collection<ResetDoc>("password_resets");
    this.passkeys = store.collection<Doc & { member_id: string }>("passkeys");
  }

  async ensureIndexes(): Promise<void> {
    await this.members.createIndexes([
      // Sign-in: findOne({ email }); one member per address, platform-wide.
      { name: "email_unique", fields: { email: 1 }, unique: true },
      // The member list of an account, and "is there another owner": find({ account_id }) by _id.
      { name: "account_id_id", fields: { account_id: 1, _id: 1 } },
    ]);
    await this.sessions.createIndexes([
      // Every session request: findOne({ hash }).
      { name: "hash_unique", fields: { hash: 1 }, unique: true },
      // Sign-out everywhere, removal: deleteMany({ member_id }).
      { name: "member_id", fields: { member_id: 1 } },
    ]);
    await this.invitations.createIndexes([
      // Accept: findOne({ hash }).
      { name: "hash_unique", fields: { hash: 1 }, unique: true },
      // The invitations of an account: find({ account_id }) by _id.
      { name: "account_id_id", fields: { account_id: 1, _id: 1 } },
    ]);
    await this.resets.createIndexes([
      // Complete: findOne({ hash }).
      { name: "hash_unique", fields: { hash: 1 }, unique: true },
    ]);
  }

  // Members.

  async createMember(input: { accountId: string; email: string; name: string; role: Role; passwordHash: string }): Promise<Member> {
    const doc: MemberDoc = {
      _id: newId("mem"),
      account_id: input.accountId,
      email: normalizeEmail(input.email),
      name: input.name,
      role: input.role,
      password_hash: input.passwordHash,
      created_at: this.timestamp(),
    };
    try {
      await this.members.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw new MemberEmailTakenError();
      throw err;
    }
    return toMember(doc);
  }

  async memberByEmail(email: string): Promise<Member | undefined> {
    const doc = await this.members.findOne({ email: normalizeEmail(email) });
    return doc ? toMember(doc) : undefined;
  }

  async getMember(accountId: string, id: string): Promise<Member | undefined> {
    if (!isId("mem", id)) return undefined;
    const doc = await this.members.findOne({ _id: id, account_id: accountId });
    return doc ? toMember(doc) : undefined;
  }

  async listMembers(accountId: string, limit: number, cursor?: string): Promise<Page<Member>> {
    const after = decodeCursor(cursor, "mem");
    const docs = await this.members.find(after ? { account_id: accountId, _id: { $gt: after } } : { account_id: accountId }, { sort: { _id: 1 }, limit: limit + 1 });
    return toPage(docs, limit, toMember);
  }

  async countOwners(accountId: string): Promise<number> {
    return this.members.count({ account_id: accountId, role: "owner" });
  }

  /** Sets a member's role; undefined when the account has no such member. */
  async setRole(accountId: string, id: string, role: Role): Promise<Member | undefined> {
    if (!isId("mem", id)) return undefined;
    const doc = await this.members.updateOne({ _id: id, account_id: accountId }, { $set: { role } });
    return doc ? toMember(doc) : undefined;
  }

  async setPassword(memberId: string, passwordHash: string): Promise<Member | undefined> {
    const doc = await this.members.updateOne({ _id: memberId }, { $set: { password_hash: passwordHash } });
    return doc ? toMember(doc) : undefined;
  }

  /** Removes a member, every session and every passkey of theirs. */
  async removeMember(accountId: string, id: string): Promise<boolean> {
    if (!isId("mem", id)) return false;
    const removed = await this.members.deleteOne({ _id: id, account_id: accountId });
    // Sessions after the member: should this stop between the two, the
    // sessions left name no member and are refused (sessionByToken).
    await this.sessions.deleteMany({ member_id: id });
    // Passkeys left by a stop here name no member: a passkey sign-in checks its member.
    await this.passkeys.deleteMany({ member_id: id });
    return removed;
  }

  // Sessions.

  /** A new session of `member`; returns it with its cookie token (stored only as a hash). */
  async createSession(member: Member, client: { ip: string; userAgent: string }): Promise<{ session: Session; token: string }> {
    const token = newSecret();
    const now = this.now();
    // Ended sessions are deleted by the members' sweep (sweep.ts; no TTL index: FerretDB has none).
    const doc: SessionDoc = {
      _id: newId("ses"),
      hash: sha256Hex(token),
      member_id: member.id,
      account_id: member.accountId,
      csrf_token: newSecret(),
      created_at: now.toISOString(),
      last_seen_at: now.toISOString(),
      expires_at: new Date(now.getTime() + SESSION_ABSOLUTE_MS).toISOString(),
      ip: client.ip,
      user_agent: client.userAgent,
    };
    await this.sessions.insertOne(doc);
    return { session: toSession(doc), token };
  }

  /**
   * The live session of a cookie's token, and its member: undefined when
   * the token is unknown, the session idle for 12 h or 7 days old, or its
   * member gone. Its last use is written when a minute old.
   */
  async sessionByToken(token: string): Promise<{ session: Session; member: Member } | undefined> {
    const doc = await this.sessions.findOne({ hash: sha256Hex(token) });
    if (!doc) return undefined;
    const now = this.now().getTime();
    if (Date.parse(doc.expires_at) <= now || Date.parse(doc.last_seen_at) + SESSION_IDLE_MS <= now) return undefined;
    const member = await this.members.findOne({ _id: doc.member_id });
    if (!member || member.account_id !== doc.account_id) return undefined;
    if (Date.parse(doc.last_seen_at) + TOUCH_EVERY_MS <= now) {
      doc.last_seen_at = new Date(now).toISOString();
      await this.sessions.updateOne({ _id: doc._id }, { $set: { last_seen_at: doc.last_seen_at } });
    }
    return { session: toSession(doc), member: toMember(member) };
  }

  async deleteSession(id: string): Promise<void> {
    await this.sessions.deleteOne({ _id: id });
  }

  /** Ends every session of a member; returns how many. */
  async deleteSessionsOf(memberId: string): Promise<number> {
    return this.sessions.deleteMany({ member_id: memberId });
  }

  // Invitations.

  /** A new invitation; returns it with its link's token (stored only as a hash). */
  async createInvitation(input: { accountId: string; email: string | null; role: Role; invitedBy: string | null }): Promise<{ invitation: Invitation; token: string }> {
    const token = newSecret();
    const now = this.now();
    const doc: InvitationDoc = {
      _id: newId("inv"),
      account_id: input.accountId,
      email: input.email === null ? null : normalizeEmail(input.email),
      role: input.role,
      hash: sha256Hex(token),
      invited_by: input.invitedBy,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + INVITATION_TTL_MS).toISOString(),
      accepted_at: null,
    };
    await this.invitations.insertOne(doc);
    return { invitation: toInvitation(doc), token };
  }

  /** The account's open invitations (not accepted, not expired), oldest first. */
  async listInvitations(accountId: string, limit: number, cursor?: string): Promise<Page<Invitation>> {
    const after = decodeCursor(cursor, "inv");
    const filter = { account_id: accountId, accepted_at: null, expires_at: { $gt: this.timestamp() }, ...(after ? { _id: { $gt: after } } : {}) };
    const docs = await this.invitations.find(filter, { sort: { _id: 1 }, limit: limit + 1 });
    return toPage(docs, limit, toInvitation);
  }

  async deleteInvitation(accountId: string, id: string): Promise<boolean> {
    if (!isId("inv", id)) return false;
    return this.invitations.deleteOne({ _id: id, account_id: accountId, accepted_at: null });
  }

  /** The open invitation of a link's token, without taking it. */
  async openInvitation(token: string): Promise<Invitation | undefined> {
    const doc = await this.invitations.findOne({ hash: sha256Hex(token), accepted_at: null, expires_at: { $gt: this.timestamp() } });
    return doc ? toInvitation(doc) : undefined;
  }

  /** Takes the invitation for good (one use): false when another request took it first. */
  async takeInvitation(id: string): Promise<boolean> {
    return (await this.invitations.updateOne({ _id: id, accepted_at: null }, { $set: { accepted_at: this.timestamp() } })) !== null;
  }

  /** Gives a taken invitation back (the member could not be made), so the link works again. */
  async releaseInvitation(id: string): Promise<void> {
    await this.invitations.updateOne({ _id: id }, { $set: { accepted_at: null } });
  }

  // Password resets.

  /** A new reset of a member's password; its id and its link's token (stored only as a hash). */
  async createPasswordReset(memberId: string): Promise<{ id: string; token: string }> {
    const token = newSecret();
    const now = this.now();
    const id = newId("pwr");
    await this.resets.insertOne({
      _id: id,
      member_id: memberId,
      hash: sha256Hex(token),
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + PASSWORD_RESET_TTL_MS).toISOString(),
      used_at: null,
    });
    return { id, token };
  }

  /** Uses a reset's token (one use): the member it is for, or undefined when unknown, used or expired. */
  async takePasswordReset(token: string): Promise<string | undefined> {
    const doc = await this.resets.updateOne({ hash: sha256Hex(token), used_at: null, expires_at: { $gt: this.timestamp() } }, { $set: { used_at: this.timestamp() } });
    return doc?.member_id;
  }

  private timestamp(): string {
    return this.now().toISOString();
  }
}

function toMember(doc: MemberDoc): Member {
  return { id: doc._id, accountId: doc.account_id, email: doc.email, name: doc.name, role: doc.role, passwordHash: doc.password_hash, createdAt: doc.created_at };
}

function toSession(doc: SessionDoc): Session {
  return {
    id: doc._id,
    memberId: doc.member_id,
    accountId: doc.account_id,
    csrfToken: doc.csrf_token,
    createdAt: doc.created_at,
    lastSeenAt: doc.last_seen_at,
    absoluteExpiresAt: doc.expires_at,
    ip: doc.ip,
    userAgent: doc.user_agent,
  };
}

function toInvitation(doc: InvitationDoc): Invitation {
  return { id: doc._id, accountId: doc.account_id, email: doc.email, role: doc.role, invitedBy: doc.invited_by, createdAt: doc.created_at, expiresAt: doc.expires_at, acceptedAt: doc.accepted_at };
}

/** When a session ends unless used again: 12 h after its last use, at most its absolute end. */
export function sessionExpiresAt(session: Session): string {
  const idle = Date.parse(session.lastSeenAt) + SESSION_IDLE_MS;
  return new Date(Math.min(idle, Date.parse(session.absoluteExpiresAt))).toISOString();
}

function toPage<D extends Doc, T>(docs: D[], limit: number, map: (doc: D) => T): Page<T> {
  const items = docs.slice(0, limit);
  const last = items[items.length - 1];
  return { items: items.map(map), nextCursor: docs.length > limit && last ? Buffer.from(last._id, "utf8").toString("base64url") : null };
}

function decodeCursor(cursor: string | undefined, prefix: string): string | undefined {
  if (cursor === undefined) return undefined;
  const id = Buffer.from(cursor, "base64url").toString("utf8");
  if (!isId(prefix, id) || Buffer.from(id, "utf8").toString("base64url") !== cursor) throw new InvalidCursorError();
  return id;
}
