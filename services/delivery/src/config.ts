import { createPrivateKey, type KeyObject } from "node:crypto";
import { ConfigError, envInt, envOptional, envString, switchSetting, type Env } from "@emailsvc/runtime";
import { DEFAULT_TEST_MODE_DAILY_LIMIT, parseTestModeDailyLimit } from "@emailsvc/ratelimit";
import { loadPreferenceLinkSettings, type PreferenceLinkSettings } from "@emailsvc/tokens";
import { DEFAULT_FROM, parseSender, type Sender } from "./domain/message.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./domain/provider.js";
import { loadProviders, type ProviderSetup } from "./providers/registry.js";
import { DEFAULT_PUBLIC_API_URL } from "./domain/unsubscribe.js";
import type { CertificateFetcher } from "./domain/sns-signature.js";
import { DEFAULT_SEND_CONCURRENCY } from "./messaging/send-consumer.js";
import { DEFAULT_SANDBOX_MAX_PER_TENANT, DEFAULT_SANDBOX_RETENTION_MS } from "./storage/sandbox-messages.js";

/** The delivery service's own settings (the common ones and the URLs are the skeleton's). */
export interface DeliveryConfig {
  /** EMAIL_PROVIDER (live-mode mail; default sandbox) and the sandbox (test mode), each with its settings read (providers/registry.ts). */
  providers: ProviderSetup;
  /** EMAIL_FROM. */
  from: Sender;
  /** OUTBOX_SWEEP_INTERVAL_MS: how often the outbox and stalled-mail sweeps run (default 2000). */
  sweepIntervalMs: number;
  /** DELIVERY_STALLED_AFTER_MS: a queued email untouched this long gets a fresh send request (default 10 min). */
  stalledAfterMs: number;
  /** TOKEN_SIGNING_KEYS as set: signs unsubscribe links (required on MongoDB; see packages/tokens). */
  tokenSigningKeys: string | undefined;
  /** PUBLIC_API_URL: where the links point (the gateway as the world reaches it). */
  publicApiUrl: string;
  /** UNSUBSCRIBE_LINK_TTL_DAYS: how long a link stays valid (default 365). */
  unsubscribeTtlDays: number;
  /** PREFERENCES_URL, PREFERENCE_TOKEN_TTL_SECONDS: `{{preference_center_url}}` in every mail to a subscriber. */
  preferenceLinks: PreferenceLinkSettings;
  /** DELIVERY_CONCURRENCY: emails sent at once by this process (default 64). */
  sendConcurrency: number;
  /** SANDBOX_RETENTION_HOURS: how long the sandbox keeps a message (default 72). */
  sandboxRetentionMs: number;
  /** SANDBOX_MAX_MESSAGES_PER_TENANT: most messages the sandbox keeps per account and mode, the oldest dropped first (default 10,000). */
  sandboxMaxPerTenant: number;
  /** TEST_MODE_DAILY_LIMIT: messages an account may send in test mode in any 24 hours (default 10,000); null: `off`. */
  testModeDailyLimit: number | null;
  /** SEALING_KEYS as set: seals the sending domains' DKIM private keys (required on MongoDB; generated under DATA_DIR on the embedded store). */
  sealingKeys: string | undefined;
  /** SPF_INCLUDE: the host a sending domain's SPF record includes (default `_spf.<EMAIL_FROM's domain>`). */
  spfInclude: string;
  /** RETURN_PATH_HOST: where a sending domain's return-path CNAME points (default `bounces.<EMAIL_FROM's domain>`). */
  returnPathHost: string;
  /** SENDER_DOMAIN_DNS_SERVERS: resolvers the records are looked up with (comma-separated ip[:port]); unset: the system's. */
  dnsServers: string[] | undefined;
  /** FEEDBACK_ID_SENDER: the constant last field of every message's Feedback-ID (default `emailsvc`). */
  feedbackTag: string;
  /** SENDER_DOMAIN_FIRST_RECHECK_MS: when a pending domain is first checked by itself; the gaps double from it up to 6 h (default 60000). */
  firstRecheckMs: number;
  /** DKIM_PLATFORM_SELECTOR with DKIM_PLATFORM_KEY: signs mail From EMAIL_FROM's address; unset: that mail goes unsigned. */
  platformDkim: { selector: string; privateKey: KeyObject } | undefined;
  /**
   * BOUNCE_SMTP_PORT and BOUNCE_SMTP_HOST (default 127.0.0.1): the bounce
   * receiver's SMTP listener; set, every message's return path names its
   * email (VERP) at RETURN_PATH_HOST or `bounces.<From domain>`. Unset: no
   * receiver, and the envelope sender is the From address.
   */
  bounceReceiver: { port: number; host: string } | undefined;
  /**
   * SES_NOTIFICATION_TOPIC_ARNS (comma-separated): the SNS topics whose
   * messages (SES's bounces, complaints, deliveries) the gateway's
   * /api/v1/providers/ses/notifications takes; empty: that route answers 404.
   */
  sesNotificationTopics: string[];
  /** Never read from the environment: tests stand in for SNS's HTTPS with it (the embedded platform's configOverrides). */
  sesCertificateFetcher?: CertificateFetcher;
  /** DELIVERY_RETRY_HOURS, DELIVERY_RETRY_BACKOFF_SECONDS, DELIVERY_RETRY_MAX_BACKOFF_SECONDS: how a deferred email is retried. */
  retry: RetryPolicy;
  /**
   * EMAIL_STATUS_BATCHES (on, off; default on): a campaign's outcomes go to
   * email.status as batch events; off: one event an email, as before batches,
   * for a rolling upgrade while a campaigns or webhooks service from before
   * batches runs (CHANGELOG.md).
   */
  outcomeBatches: boolean;
}

/** Reads the environment once; a bad value stops the start with a message naming the variable. */
export function loadConfig(env: Env = process.env): DeliveryConfig {
  const providers = loadProviders(env);
  let from: Sender;
  try {
    from = parseSender(envString("EMAIL_FROM", DEFAULT_FROM, env));
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  return {
    providers,
    from,
    sweepIntervalMs: envInt("OUTBOX_SWEEP_INTERVAL_MS", 2000, { min: 10, max: 600_000 }, env),
    stalledAfterMs: envInt("DELIVERY_STALLED_AFTER_MS", 10 * 60_000, { min: 1000, max: 7 * 24 * 3_600_000 }, env),
    tokenSigningKeys: envOptional("TOKEN_SIGNING_KEYS", env),
    publicApiUrl: publicApiUrl(envString("PUBLIC_API_URL", DEFAULT_PUBLIC_API_URL, env)),
    unsubscribeTtlDays: envInt("UNSUBSCRIBE_LINK_TTL_DAYS", 365, { min: 1, max: 3650 }, env),
    preferenceLinks: loadPreferenceLinkSettings(env),
    sendConcurrency: envInt("DELIVERY_CONCURRENCY", DEFAULT_SEND_CONCURRENCY, { min: 1, max: 256 }, env),
    sandboxRetentionMs: envInt("SANDBOX_RETENTION_HOURS", DEFAULT_SANDBOX_RETENTION_MS / 3_600_000, { min: 1, max: 24 * 365 }, env) * 3_600_000,
    sandboxMaxPerTenant: envInt("SANDBOX_MAX_MESSAGES_PER_TENANT", DEFAULT_SANDBOX_MAX_PER_TENANT, { min: 1, max: 10_000_000 }, env),
    testModeDailyLimit: testModeDailyLimit(env),
    sealingKeys: envOptional("SEALING_KEYS", env),
    spfInclude: hostSetting("SPF_INCLUDE", `_spf.${from.domain}`, env),
    returnPathHost: hostSetting("RETURN_PATH_HOST", `bounces.${from.domain}`, env),
    dnsServers: dnsServers(env),
    feedbackTag: feedbackTag(env),
    firstRecheckMs: envInt("SENDER_DOMAIN_FIRST_RECHECK_MS", 60_000, { min: 1000, max: 3_600_000 }, env),
    platformDkim: platformDkim(env),
    bounceReceiver: bounceReceiver(env),
    sesNotificationTopics: sesNotificationTopics(env),
    retry: {
      windowMs: Math.round(retryHours(envOptional("DELIVERY_RETRY_HOURS", env)) * 3_600_000),
      backoffMs: envInt("DELIVERY_RETRY_BACKOFF_SECONDS", DEFAULT_RETRY.backoffMs / 1000, { min: 1, max: 86_400 }, env) * 1000,
      maxBackoffMs: envInt("DELIVERY_RETRY_MAX_BACKOFF_SECONDS", DEFAULT_RETRY.maxBackoffMs / 1000, { min: 1, max: 86_400 }, env) * 1000,
    },
    outcomeBatches: switchSetting(env, "EMAIL_STATUS_BATCHES", "on"),
  };
}

const HOST = /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** A host name setting, lower case, without a trailing dot. */
function hostSetting(name: string, fallback: string, env: Env): string {
  const value = envString(name, fallback, env).trim().toLowerCase().replace(/\.$/, "");
  if (!HOST.test(value)) throw new ConfigError(`${name} must be a host name such as _spf.example.com, got "${value}"`);
  return value;
}

function dnsServers(env: Env): string[] | undefined {
  const servers = envOptional("SENDER_DOMAIN_DNS_SERVERS", env)?.split(",").map((s) => s.trim()).filter(Boolean);
  return servers && servers.length > 0 ? servers : undefined;
}

/**
 * The platform's own DKIM key for mail From EMAIL_FROM: DKIM_PLATFORM_SELECTOR
 * and DKIM_PLATFORM_KEY (a PKCS#8 or PKCS#1 PEM of an RSA key; `\n` may
 * stand for its line breaks), both or neither. The error never shows the key.
 */
function platformDkim(env: Env): { selector: string; privateKey: KeyObject } | undefined {
  const selector = envOptional("DKIM_PLATFORM_SELECTOR", env)?.trim();
  const pem = envOptional("DKIM_PLATFORM_KEY", env);
  if (!selector && !pem) return undefined;
  if (!selector || !pem) throw new ConfigError("DKIM_PLATFORM_SELECTOR and DKIM_PLATFORM_KEY go together: set both to sign mail From EMAIL_FROM, or neither");
  if (!/^[a-z0-9](?:[a-z0-9-_.]{0,62})$/i.test(selector)) throw new ConfigError(`DKIM_PLATFORM_SELECTOR must be a DNS label such as s2026, got "${selector}"`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem.replace(/\\n/g, "\n"));
  } catch {
    throw new ConfigError("DKIM_PLATFORM_KEY is not a private key in PEM (-----BEGIN PRIVATE KEY-----…)");
  }
  // RSA: every verifier knows it (the Ed25519 signature rides on an RSA one; providers/dkim.ts).
  if (privateKey.asymmetricKeyType !== "rsa") throw new ConfigError(`DKIM_PLATFORM_KEY must be an RSA key (2048 bits or more), got ${privateKey.asymmetricKeyType}`);
  return { selector, privateKey };
}

/** Gmail's Feedback-ID fields are colon-separated: the tag is one field of letters, digits, `.`, `_` and `-`. */
function feedbackTag(env: Env): string {
  const value = envString("FEEDBACK_ID_SENDER", "emailsvc", env).trim();
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(value)) throw new ConfigError(`FEEDBACK_ID_SENDER must be 1-64 letters, digits, ".", "_" or "-", got "${value}"`);
  return value;
}

function bounceReceiver(env: Env): { port: number; host: string } | undefined {
  if (envOptional("BOUNCE_SMTP_PORT", env) === undefined) return undefined;
  return { port: envInt("BOUNCE_SMTP_PORT", 25, { min: 0, max: 65_535 }, env), host: envString("BOUNCE_SMTP_HOST", "127.0.0.1", env) };
}

/** `arn:aws:sns:<region>:<account>:<topic>` (or the aws-cn, aws-us-gov partitions), each exactly as SNS writes it in TopicArn. */
function sesNotificationTopics(env: Env): string[] {
  const topics = (envOptional("SES_NOTIFICATION_TOPIC_ARNS", env) ?? "").split(",").map((t) => t.trim()).filter(Boolean);
  for (const topic of topics) {
    if (!/^arn:aws(-cn|-us-gov)?:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/.test(topic)) {
      throw new ConfigError(`SES_NOTIFICATION_TOPIC_ARNS must list SNS topic ARNs such as arn:aws:sns:eu-west-1:123456789012:ses-events, got "${topic}"`);
    }
  }
  return topics;
}

/** DELIVERY_RETRY_HOURS: a number of hours (decimals allowed, so that tests can use seconds), at most 30 days. */
function retryHours(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return DEFAULT_RETRY.windowMs / 3_600_000;
  const hours = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(hours > 0) || hours > 720) {
    throw new ConfigError(`DELIVERY_RETRY_HOURS must be a number of hours above 0 and at most 720 (decimals allowed), got "${raw}"`);
  }
  return hours;
}

function testModeDailyLimit(env: Env): number | null {
  try {
    return parseTestModeDailyLimit(envOptional("TEST_MODE_DAILY_LIMIT", env), DEFAULT_TEST_MODE_DAILY_LIMIT);
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
}

function publicApiUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`PUBLIC_API_URL must be a URL like https://api.example.com, got "${raw}"`);
  }
  if ((url.protocol !== "https:" && url.protocol !== "http:") || url.search || url.hash || url.username) {
    throw new ConfigError(`PUBLIC_API_URL must be an http(s) URL without query, fragment or credentials, got "${raw}"`);
  }
  return url.toString().replace(/\/+$/, "");
}
