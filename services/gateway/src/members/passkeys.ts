import { randomBytes } from "node:crypto";
import { isId, newId } from "@emailsvc/ids";
import { DuplicateKeyError, type Collection, type Doc, type DocumentStore } from "@emailsvc/storage";
import { sha256Hex } from "../accounts/secrets.js";

// Members' passkeys (WebAuthn credentials) and the challenges their
// ceremonies sign. A challenge is 32 random bytes, stored as its SHA-256
// only, used once, dead after 5 minutes, and bound: a registration's to the
// session that asked for it, a sign-in's to the pending sign-in's id its
// options came with. Credentials keep their public key and signature
// counter; they go with their member (MemberStore.removeMember), and a
// sign-in checks the member still exists anyway.

export const PASSKEY_CHALLENGE_TTL_MS = 5 * 60_000;

export type ChallengePurpose = "registration" | "authentication";

export interface Passkey {
  id: string;
  memberId: string;
  accountId: string;
  /** The authenticator's credential id, base64url. */
  credentialId: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

interface PasskeyDoc extends Doc {
  member_id: string;
  account_id: string;
  credential_id: string;
  /** COSE public key, base64url. */
  public_key: string;
  counter: number;
  transports: string[];
  name: string;
  created_at: string;
  last_used_at: string | null;
}

interface ChallengeDoc extends Doc {
  purpose: ChallengePurpose;
  /** SHA-256 (hex) of the challenge. */
  hash: string;
  /** The session a registration's challenge belongs to; null for a sign-in's. */
  session_id: string | null;
  expires_at: string;
  used_at: string | null;
}

export class PasskeyExistsError extends Error {}

export class PasskeyStore {
  private readonly passkeys: Collection<PasskeyDoc>;
  private readonly challenges: Collection<ChallengeDoc>;

  constructor(
    store: DocumentStore,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.passkeys = store.collection<PasskeyDoc>("passkeys");
    this.challenges = store.collection<ChallengeDoc>("passkey_challenges");
  }

  async ensureIndexes(): Promise<void> {
    await this.passkeys.createIndexes([
      // A sign-in: findOne({ credential_id }); a credential is registered once, platform-wide.
      { name: "credential_id_unique", fields: { credential_id: 1 }, unique: true },
      // A member's list, their removal: find/deleteMany({ member_id }).
      { name: "member_id_id", fields: { member_id: 1, _id: 1 } },
    ]);
    // Ended challenges go when the next is made: deleteMany({ expires_at <= now }) (no TTL index on FerretDB).
    await this.challenges.createIndexes([{ name: "expires_at", fields: { expires_at: 1 } }]);
  }

  /** A new challenge: its id and the challenge (base64url) for the options. */
  async createChallenge(purpose: ChallengePurpose, sessionId: string | null): Promise<{ id: string; challenge: string }> {
    const now = this.now();
    await this.challenges.deleteMany({ expires_at: { $lte: now.toISOString() } });
    const challenge = randomBytes(32).toString("base64url");
    const id = newId("pkc");
    await this.challenges.insertOne({
      _id: id,
      purpose,
      hash: sha256Hex(challenge),
      session_id: sessionId,
      expires_at: new Date(now.getTime() + PASSKEY_CHALLENGE_TTL_MS).toISOString(),
      used_at: null,
    });
    return { id, challenge };
  }

  /**
   * Takes a challenge for good (one use): its hash, or undefined when unknown,
   * used, expired, for another purpose or of another session.
   */
  async takeChallenge(id: string, purpose: ChallengePurpose, sessionId: string | null): Promise<string | undefined> {
    if (!isId("pkc", id)) return undefined;
    const now = this.now().toISOString();
    const doc = await this.challenges.updateOne({ _id: id, purpose, session_id: sessionId, used_at: null, expires_at: { $gt: now } }, { $set: { used_at: now } });
    return doc?.hash;
  }

  async create(input: { memberId: string; accountId: string; credentialId: string; publicKey: Uint8Array; counter: number; transports: string[]; name: string }): Promise<Passkey> {
    const doc: PasskeyDoc = {
      _id: newId("pk"),
      member_id: input.memberId,
      account_id: input.accountId,
      credential_id: input.credentialId,
      public_key: Buffer.from(input.publicKey).toString("base64url"),
      counter: input.counter,
      transports: input.transports,
      name: input.name,
      created_at: this.now().toISOString(),
      last_used_at: null,
    };
    try {
      await this.passkeys.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw new PasskeyExistsError();
      throw err;
    }
    return toPasskey(doc);
  }

  async listOf(memberId: string): Promise<Passkey[]> {
    return (await this.passkeys.find({ member_id: memberId }, { sort: { _id: 1 }, limit: 100 })).map(toPasskey);
  }

  async byCredentialId(credentialId: string): Promise<Passkey | undefined> {
    const doc = await this.passkeys.findOne({ credential_id: credentialId });
    return doc ? toPasskey(doc) : undefined;
  }

  /**
   * Records a sign-in: the new counter and the time. Only when the counter is
   * still the one verified against, so two sign-ins racing with one
   * authenticator's answer cannot both win; false when it moved meanwhile.
   */
  async recordUse(id: string, verifiedCounter: number, newCounter: number): Promise<boolean> {
    const doc = await this.passkeys.updateOne({ _id: id, counter: verifiedCounter }, { $set: { counter: newCounter, last_used_at: this.now().toISOString() } });
    return doc !== null;
  }

  /** Removes a member's own passkey; false when they have none with this id. */
  async remove(memberId: string, id: string): Promise<boolean> {
    if (!isId("pk", id)) return false;
    return this.passkeys.deleteOne({ _id: id, member_id: memberId });
  }

  async removeAllOf(memberId: string): Promise<number> {
    return this.passkeys.deleteMany({ member_id: memberId });
  }
}

function toPasskey(doc: PasskeyDoc): Passkey {
  return {
    id: doc._id,
    memberId: doc.member_id,
    accountId: doc.account_id,
    credentialId: doc.credential_id,
    publicKey: new Uint8Array(Buffer.from(doc.public_key, "base64url")),
    counter: doc.counter,
    transports: doc.transports,
    name: doc.name,
    createdAt: doc.created_at,
    lastUsedAt: doc.last_used_at,
  };
}
