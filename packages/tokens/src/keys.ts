import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// Signing keys of the platform's tokens. Keys come from the environment
// (`TOKEN_SIGNING_KEYS`), never from the database, so a leaked dump cannot
// mint links. Rotation without downtime: the first key signs, every key listed
// verifies, and each token names its key (`kid`). To rotate, put a new key
// first and keep the old one after it until the longest-lived token it signed
// has expired, then remove it.

/** One HMAC key: its id (in every token it signs) and at least 32 random bytes. */
export interface SigningKey {
  id: string;
  secret: Buffer;
}

export class KeyConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeyConfigError";
  }
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
/** HS256 wants a key as long as the hash (RFC 7518 §3.2). */
export const MIN_SECRET_BYTES = 32;

/** The keys in use: the first signs, all verify. */
export class KeyRing {
  private readonly byId: Map<string, SigningKey>;

  constructor(readonly keys: readonly SigningKey[]) {
    if (keys.length === 0) throw new KeyConfigError("a key ring needs at least one key");
    this.byId = new Map();
    for (const key of keys) {
      if (!KEY_ID.test(key.id)) throw new KeyConfigError(`key id "${key.id}" must be 1-32 of A-Z a-z 0-9 _ -`);
      if (key.secret.length < MIN_SECRET_BYTES) {
        throw new KeyConfigError(`key "${key.id}" is ${key.secret.length} bytes; at least ${MIN_SECRET_BYTES} are needed`);
      }
      if (this.byId.has(key.id)) throw new KeyConfigError(`key id "${key.id}" is listed twice`);
      this.byId.set(key.id, key);
    }
  }

  /** The key new tokens are signed with. */
  get current(): SigningKey {
    return this.keys[0]!;
  }

  find(id: string): SigningKey | undefined {
    return this.byId.get(id);
  }
}

/**
 * Parses `kid:secret[,kid:secret…]`, secrets in base64url or base64 (e.g.
 * `k2026:$(openssl rand -base64 32),k2025:…`). Errors name the variable but
 * never repeat a secret.
 */
export function parseKeyRing(value: string, variable = "TOKEN_SIGNING_KEYS"): KeyRing {
  const keys: SigningKey[] = [];
  for (const part of value.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const colon = part.indexOf(":");
    if (colon <= 0) throw new KeyConfigError(`${variable}: each key is "<id>:<base64 secret>", separated by commas`);
    const id = part.slice(0, colon);
    const encoded = part.slice(colon + 1);
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) {
      throw new KeyConfigError(`${variable}: the secret of key "${id}" is not base64`);
    }
    keys.push({ id, secret: Buffer.from(encoded.replace(/-/g, "+").replace(/_/g, "/"), "base64") });
  }
  try {
    return new KeyRing(keys);
  } catch (err) {
    throw new KeyConfigError(`${variable}: ${(err as Error).message}`);
  }
}

/** A new random key, as `parseKeyRing` reads it. */
export function generateKeyText(id = `k${new Date().toISOString().slice(0, 10).replace(/-/g, "")}`): string {
  return `${id}:${randomBytes(MIN_SECRET_BYTES).toString("base64url")}`;
}

export interface LoadKeyRingOptions {
  /** The variable as set (empty or undefined: not set). */
  value: string | undefined;
  /**
   * Which variable this is (default `TOKEN_SIGNING_KEYS`), for messages and
   * for the development file's name (`<dir>/secrets/<variable in kebab case>`).
   * `SUPPRESSION_KEYS` (the subscribers service's keyed hashes of erased
   * addresses) is read the same way.
   */
  variable?: string;
  /**
   * Where a development key may be kept when the variable is not set: the
   * embedded store's DATA_DIR. Undefined (a deployment on MongoDB) makes the
   * variable required, so replicas never each invent their own key.
   */
  developmentDir?: string | undefined;
}

/**
 * The key ring from the environment, or, for the embedded mode only, a key
 * generated once and kept in `<dataDir>/secrets/token-signing-keys` (mode
 * 0600) so that links stay valid across restarts and every service of the
 * process signs and verifies with the same key.
 */
export function loadKeyRing(options: LoadKeyRingOptions): KeyRing {
  const variable = options.variable ?? "TOKEN_SIGNING_KEYS";
  if (!/^[A-Z][A-Z0-9_]*$/.test(variable)) throw new KeyConfigError(`"${variable}" is no variable name`);
  if (options.value !== undefined && options.value.trim() !== "") return parseKeyRing(options.value, variable);
  if (options.developmentDir === undefined) {
    throw new KeyConfigError(
      `${variable} is required (e.g. k1:$(openssl rand -base64 32)); every replica of every service needs the same value`,
    );
  }
  const dir = join(options.developmentDir, "secrets");
  const file = join(dir, variable.toLowerCase().replace(/_/g, "-"));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Written beside and hard-linked into place: of two processes starting at
  // once, one key wins and neither ever reads a half-written file.
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(temp, `${generateKeyText("dev")}\n`, { mode: 0o600 });
  try {
    linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    unlinkSync(temp);
  }
  return parseKeyRing(readFileSync(file, "utf8"), file);
}
