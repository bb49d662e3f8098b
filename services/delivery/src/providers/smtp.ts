import { ConfigError, envOptional } from "@emailsvc/runtime";
import { scrubReason, type OutgoingMessage } from "../domain/message.js";
import { SendFailure, type EmailProvider, type FailureCode, type FailureKind, type SendContext, type SendResult } from "../domain/provider.js";
import { defineProvider } from "./definition.js";
import { buildMessage, lowerDomain } from "./mime.js";
import { SmtpPool, type SmtpErrorFields } from "./smtp-client.js";

/** Where and how to reach the relay; parsed from SMTP_URL. */
export interface SmtpSettings {
  host: string;
  port: number;
  /** Implicit TLS from the first byte (`smtps://`, usually port 465). */
  secure: boolean;
  user?: string | undefined;
  pass?: string | undefined;
  /** With `smtp://`: refuse to send unless STARTTLS succeeds (`?require_tls=true`). */
  requireTls: boolean;
  /** Verify the relay's certificate (default true; `?tls_verify=false` for a relay with a self-signed one). */
  tlsVerify: boolean;
  /** Pooled connections kept open to the relay (`?pool=N`, default 5). */
  maxConnections: number;
  /**
   * Send with BDAT, whole transactions pipelined, when the relay offers
   * CHUNKING and PIPELINING (default on; `?chunking=off` keeps to DATA, for a
   * relay whose CHUNKING misbehaves).
   */
  chunking: boolean;
}

/** Timeouts in ms; a dead relay must fail fast, a slow one may take its time to accept DATA. */
export interface SmtpTimeouts {
  connectionMs: number;
  greetingMs: number;
  socketMs: number;
}

export const DEFAULT_SMTP_TIMEOUTS: SmtpTimeouts = { connectionMs: 5000, greetingMs: 5000, socketMs: 20000 };

const bool = (value: string | null, fallback: boolean, name: string): boolean => {
  if (value === null) return fallback;
  if (value === "true" || value === "1") return true;
  if (value === "false" || value === "0") return false;
  throw new Error(`SMTP_URL: ${name} must be true or false`);
};

/** A switch written on/off (as true/false too). */
const onOff = (value: string | null, fallback: boolean, name: string): boolean => {
  if (value === null) return fallback;
  if (value === "on" || value === "true" || value === "1") return true;
  if (value === "off" || value === "false" || value === "0") return false;
  throw new Error(`SMTP_URL: ${name} must be on or off`);
};

/**
 * `smtp://user:pass@host:587` (STARTTLS when offered) or `smtps://user:pass@host:465`
 * (implicit TLS). User and password are percent-decoded. Query options:
 * `require_tls`, `tls_verify`, `pool`, `chunking`. Errors never repeat the URL (it holds the password).
 */
export function parseSmtpUrl(raw: string): SmtpSettings {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error("SMTP_URL is not a URL (smtp://user:pass@host:587 or smtps://user:pass@host:465)");
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") throw new Error("SMTP_URL must start with smtp:// or smtps://");
  if (!url.hostname) throw new Error("SMTP_URL names no host");
  const secure = url.protocol === "smtps:";
  const known = new Set(["require_tls", "tls_verify", "pool", "chunking"]);
  for (const key of url.searchParams.keys()) if (!known.has(key)) throw new Error(`SMTP_URL: unknown option ${key}`);
  const pool = url.searchParams.get("pool");
  const maxConnections = pool === null ? 5 : Number(pool);
  if (!Number.isInteger(maxConnections) || maxConnections < 1 || maxConnections > 100) throw new Error("SMTP_URL: pool must be 1-100");
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    user: url.username ? decodeURIComponent(url.username) : undefined,
    pass: url.password ? decodeURIComponent(url.password) : undefined,
    requireTls: bool(url.searchParams.get("require_tls"), false, "require_tls"),
    tlsVerify: bool(url.searchParams.get("tls_verify"), true, "tls_verify"),
    maxConnections,
    chunking: onOff(url.searchParams.get("chunking"), true, "chunking"),
  };
}

/** SMTP_URL without its password, for logs. */
export function describeSmtp(settings: SmtpSettings): string {
  return `${settings.secure ? "smtps" : "smtp"}://${settings.user ? `${settings.user}@` : ""}${settings.host}:${settings.port}`;
}

/**
 * Sends through any SMTP relay with our own client (./smtp-client.ts): a pool
 * of connections reused for many messages, pipelined when the relay offers
 * it (whole transactions, with BDAT, when it offers CHUNKING too); the Message-ID we give (so a resend carries the same one), the message
 * written and signed by ./mime.ts. Failures become SendFailure: 5xx
 * permanent, 4xx transient, no relay to talk to unreachable, our abort
 * aborted.
 */
export class SmtpProvider implements EmailProvider {
  readonly name = "smtp" as const;
  private readonly pool: SmtpPool;

  constructor(settings: SmtpSettings, timeouts: SmtpTimeouts = DEFAULT_SMTP_TIMEOUTS) {
    this.pool = new SmtpPool({ ...settings, ...timeouts });
  }

  /** Connections opened since the start (tests count reuse with it). */
  get connectionsOpened(): number {
    return this.pool.opened;
  }

  async send(message: OutgoingMessage, context: SendContext): Promise<SendResult> {
    try {
      const { raw, noDotLines } = await buildMessage(message);
      // Domains in lower case, as in the To header (the same mailbox; the local part goes as stored).
      const envelope = { from: lowerDomain(message.returnPath ?? message.from.address), to: lowerDomain(message.to) };
      const response = await this.pool.send(envelope, raw, context.signal, noDotLines);
      return { response: scrubReason(response || "accepted", message.to) };
    } catch (err) {
      throw classifySmtpError(err as SmtpErrorFields & Error, message.to, context.signal);
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

const UNREACHABLE_CODES = new Set(["ECONNECTION", "ESOCKET", "EDNS", "ETLS", "EPROXY"]);

/**
 * Maps an SMTP client error to what it means for the email. The relay's
 * reply (addresses removed) is what a client may see; the client's own
 * messages (socket errors) are detail for operators only.
 */
export function classifySmtpError(err: SmtpErrorFields & Error, recipient: string, signal?: AbortSignal): SendFailure {
  const reply = typeof err.response === "string" && err.response ? scrubReason(err.response, recipient) : "";
  const detail = reply || scrubReason(`${err.code ?? "error"}: ${err.message}`, recipient);
  const failure = (kind: FailureKind, code: FailureCode, withReply = true) => new SendFailure(kind, code, { reply: withReply ? reply : "", detail });
  if (err.code === "EABORT" || err.name === "AbortError" || signal?.aborted) return failure("aborted", "send_aborted", false);
  // Our credentials were refused: a setting to fix, not this message's fault (even with a 535).
  if (err.code === "EAUTH" || err.code === "ENOAUTH") return failure("unreachable", "relay_unavailable", false);
  if (typeof err.responseCode === "number") {
    // 421: the service is shutting down / not available: not about this message.
    if (err.responseCode === 421) return failure("unreachable", "relay_unavailable", false);
    if (err.responseCode >= 500 && err.responseCode < 600 && err.responseCode !== 503) {
      return failure("permanent", err.command === "RCPT TO" || err.code === "EENVELOPE" ? "recipient_rejected" : "message_rejected");
    }
    return failure("transient", "relay_deferred");
  }
  if (err.code === "ETIMEDOUT") {
    // No answer to a command in flight (SOCKET_TIMEOUT): the relay may have taken the message.
    return err.timeoutType === "SOCKET_TIMEOUT" ? failure("transient", "relay_deferred") : failure("unreachable", "relay_unavailable");
  }
  if (err.code && UNREACHABLE_CODES.has(err.code)) return failure("unreachable", "relay_unavailable");
  if (err.code === "EENVELOPE") return failure("permanent", "recipient_rejected");
  return failure("transient", "relay_deferred");
}

/**
 * In the registry: `EMAIL_PROVIDER=smtp` with `SMTP_URL` (required; parsed at
 * start, so a bad one stops the service with a message naming it, never
 * repeating the password).
 */
export const smtpProvider = defineProvider({
  name: "smtp",
  settings(env): SmtpSettings {
    const url = envOptional("SMTP_URL", env);
    if (!url) throw new ConfigError("EMAIL_PROVIDER=smtp needs SMTP_URL (smtp://user:pass@host:587)");
    try {
      return parseSmtpUrl(url);
    } catch (err) {
      throw new ConfigError(err instanceof Error ? err.message : String(err));
    }
  },
  describe: describeSmtp,
  build: (settings) => new SmtpProvider(settings),
  threadable: true,
});
