import type { KeyObject } from "node:crypto";
import type { Transport } from "@connectrpc/connect";
import type { EventBus } from "@emailsvc/events";
import { delivery } from "@emailsvc/proto";
import type { OutboxRelay } from "@emailsvc/outbox";
import { DocumentCounterStore, testModeQuota } from "@emailsvc/ratelimit";
import { createServiceTransport, startServiceServer } from "@emailsvc/grpc";
import { type Logger } from "@emailsvc/telemetry";
import { tenantKey, tenantOfKey, type CallContext } from "@emailsvc/tenancy";
import { systemDnsLookups, type DnsLookups } from "@emailsvc/address";
import { DEFAULT_RECHECK, type RecheckPolicy, type SenderDnsSettings } from "./domain/sender-domain.js";
import { senderDomainRoutes } from "./rpc/sender-domains.js";
import { recheckSenderDomains } from "./usecases/recheck-sender-domains.js";
import { SigningKeyCache, type SenderDomainDeps } from "./usecases/sender-domains.js";
import type { DocumentStore } from "@emailsvc/storage";
import { DEFAULT_FROM, parseSender, type Sender } from "./domain/message.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./domain/provider.js";
import { RendererCache, type CompileRenderer } from "./domain/renderer.js";
import { deliveryOutbox } from "./messaging/outbox.js";
import { topicsOf } from "@emailsvc/manifest";
import { SendConsumer } from "./messaging/send-consumer.js";
import { loadProviders, Providers, type ProviderSetup } from "./providers/registry.js";
import { deliveryRoutes } from "./rpc/services.js";
import { templatesClient } from "./rpc/templates-client.js";
import { subscribersDirectory, subscribersProblemSink } from "./rpc/subscribers-client.js";
import type { EmailDoc } from "./storage/documents.js";
import { DeliveryStorage } from "./storage/repositories.js";
import type { SandboxSettings } from "./storage/sandbox-messages.js";
import { compileRenderer } from "@emailsvc/render";
import { generateKeyText, mailLinkWarning, mintConfirmationLink, mintPreferenceLink, parseKeyRing, portalDomainLookup, PreferenceLinkBase, type KeyRing, type PreferenceLinkSettings } from "@emailsvc/tokens";
import { DEFAULT_PUBLIC_API_URL, unsubscribeLinks, type UnsubscribeUrlSource } from "./domain/unsubscribe.js";
import type { Deps, OutboxFlusher } from "./usecases/deps.js";
import type * as BounceReceiver from "./inbound/bounce-receiver.js";
import type { RunningBounceReceiver } from "./inbound/bounce-receiver.js";
import { applyFeedbackReport, type ApplyReportDeps } from "./usecases/apply-feedback-report.js";
import { fetchCertificate, SnsSignatureVerifier, type CertificateFetcher } from "./domain/sns-signature.js";
import { takeSesNotification, type ProviderNotificationDeps } from "./usecases/take-provider-notification.js";

export interface DeliveryServiceOptions {
  store: DocumentStore;
  bus: EventBus;
  logger: Logger;
  /** 0 picks a free port (tests, the embedded mode). */
  port: number;
  host?: string;
  /** TemplateService: its URL, or a ready transport (tests: createRouterTransport). One is required. */
  templatesUrl?: string;
  templatesTransport?: Transport;
  /**
   * SubscriberService (SUBSCRIBERS_URL), for the `metadata.*` built-in
   * variables of a recipient who is a subscriber and the email's link to that
   * subscriber (for erasure on subscriber.deleted). Optional: without it,
   * templates get `email` only and no email is linked, so none is erased.
   */
  subscribersUrl?: string;
  subscribersTransport?: Transport;
  /**
   * The providers, from the registry (providers/registry.ts): live-mode mail
   * goes through EMAIL_PROVIDER's, test-mode mail always to the sandbox.
   * Default: the sandbox for both. Tests: `loadProviders({ EMAIL_PROVIDER: "smtp", SMTP_URL })`.
   */
  providers?: ProviderSetup;
  /** EMAIL_FROM (default `Email Platform <no-reply@localhost>`). */
  from?: string | Sender;
  /** compileRenderer of @emailsvc/render (the default); tests may pass another. */
  renderer?: CompileRenderer;
  /**
   * Signs the one-click unsubscribe links of marketing mail (TOKEN_SIGNING_KEYS,
   * the keys the gateway verifies them with), and where they point
   * (PUBLIC_API_URL, default http://localhost:8080). Without keys, marketing
   * mail carries no List-Unsubscribe (only tests start it so).
   */
  tokenKeys?: KeyRing;
  publicApiUrl?: string;
  /** How long a link stays valid (default 365 days). */
  unsubscribeTtlDays?: number;
  /** Replaces the links made from tokenKeys (tests). */
  unsubscribeUrl?: UnsubscribeUrlSource;
  /** Where preference links point and how long they work (PREFERENCES_URL, PREFERENCE_TOKEN_TTL_SECONDS); minted with tokenKeys. */
  preferenceLinks?: PreferenceLinkSettings;
  /**
   * The portal's DomainService (PORTAL_URL; optional): a tenant whose custom
   * domain is active gets links on it (cached 30 s per account; without an
   * answer, PREFERENCES_URL). See packages/tokens, preference-host.ts.
   */
  portalUrl?: string;
  portalTransport?: Transport;
  /**
   * SES's notifications through SNS (SES_NOTIFICATION_TOPIC_ARNS: the topics
   * taken; none: TakeProviderNotification answers NOT_FOUND). Tests pass their
   * own `fetchCertificate` (the signing certificate, and the SubscribeURL
   * visited); production fetches from SNS over HTTPS.
   */
  sesNotifications?: { topics: readonly string[]; fetchCertificate?: CertificateFetcher };
  /** How a deferred email is retried (DELIVERY_RETRY_*; default 1 min doubling to 1 h apart, for 72 h). */
  retry?: Partial<RetryPolicy>;
  /**
   * The bounce receiver's listener (BOUNCE_SMTP_PORT/HOST; port 0: any free
   * one, for tests): with it, return paths name their email (needs
   * tokenKeys) and what comes back to them is applied (inbound/).
   */
  bounceReceiver?: { port: number; host: string };
  /**
   * How long a claim holds an email without renewal (default 10 s): a crashed
   * attempt's email is free again within this. Renewed every third of it
   * while a send runs.
   */
  leaseMs?: number;
  /** The longest one send attempt may take, renewals included (default 60 s). */
  attemptTimeoutMs?: number;
  /** Outbox and stalled-email sweeps; tests shorten them. */
  sweepIntervalMs?: number;
  sweepGraceMs?: number;
  stalledAfterMs?: number;
  /** Consumer group of the consumer of email.send.requested and subscriber.deleted (default `delivery`; tests sharing a Kafka use their own). */
  consumerGroup?: string;
  /** Emails sent at once from one batch of send requests (DELIVERY_CONCURRENCY; default 64). */
  sendConcurrency?: number;
  /** EMAIL_STATUS_BATCHES: a campaign's outcomes as batch events on email.status (default true); false: one an email. */
  outcomeBatches?: boolean;
  /** Compiled templates kept (default 500 versions). */
  rendererCacheSize?: number;
  /**
   * TEST_MODE_DAILY_LIMIT: messages an account may send in test mode in any
   * 24 hours, counted in this service's store (@emailsvc/ratelimit,
   * testModeQuota); unset or null: no quota (the service module sets it).
   */
  testModeDailyLimit?: number | null;
  /** What the sandbox keeps and for how long (SANDBOX_*; bodies in files under `bodiesDir` on the embedded store). Default: 72 h, 10,000 per tenant, bodies in the rows. */
  sandbox?: SandboxSettings;
  /**
   * SEALING_KEYS: seals the sending domains' DKIM private keys. The service
   * module always passes the ring; without one (tests only) a key made for
   * this process seals them, so they do not open after a restart.
   */
  sealingKeys?: KeyRing;
  /**
   * Sending domains: the platform's side of their records (SPF_INCLUDE,
   * RETURN_PATH_HOST, default from EMAIL_FROM's domain), the DNS they are
   * checked against (tests: `dns`; else node:dns with SENDER_DOMAIN_DNS_SERVERS
   * or the system's resolvers) and the re-check's schedule.
   */
  senderDomains?: Partial<SenderDnsSettings> & { dns?: DnsLookups; dnsServers?: readonly string[]; recheck?: Partial<RecheckPolicy> };
  /** FEEDBACK_ID_SENDER (default `emailsvc`). */
  feedbackTag?: string;
  /** DKIM_PLATFORM_SELECTOR and DKIM_PLATFORM_KEY: signs mail From EMAIL_FROM; absent: that mail goes unsigned. */
  platformDkim?: { selector: string; privateKey: KeyObject };
}

export interface RunningDeliveryService {
  url: string;
  port: number;
  /** The bounce receiver's SMTP port, when it runs. */
  bouncePort: number | undefined;
  relay: OutboxRelay<EmailDoc>;
  /**
   * Drains: NOT_SERVING, the gRPC server finishes calls in flight, the consumer
   * stops (a send still running after `graceMs`, default 10 s, is cut off and
   * left to its lease), the relay finishes, SMTP connections close. Store and
   * bus stay open (the caller owns them).
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

export async function startDeliveryService(options: DeliveryServiceOptions): Promise<RunningDeliveryService> {
  const { store, bus, logger } = options;
  const transport =
    options.templatesTransport ?? (options.templatesUrl ? createServiceTransport(options.templatesUrl) : undefined);
  if (!transport) throw new Error("startDeliveryService needs templatesUrl or templatesTransport");
  const providerSetup = options.providers ?? loadProviders({});
  const sender = typeof options.from === "object" ? options.from : parseSender(options.from ?? DEFAULT_FROM);
  const compile: CompileRenderer = options.renderer ?? compileRenderer;

  const storage = new DeliveryStorage(store, options.sandbox, (what, err) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, what));
  await Promise.all([storage.createIndexes(), bus.ensureTopics(topicsOf("delivery"))]);

  const now = Date.now;
  const sealingKeys = options.sealingKeys ?? parseKeyRing(generateKeyText("process"), "SEALING_KEYS");
  const domainOptions = options.senderDomains ?? {};
  const senderDomainDeps: SenderDomainDeps = {
    sealingKeys,
    dns: domainOptions.dns ?? systemDnsLookups(domainOptions.dnsServers),
    dnsSettings: {
      spfInclude: domainOptions.spfInclude ?? `_spf.${sender.domain}`,
      returnPathHost: domainOptions.returnPathHost ?? `bounces.${sender.domain}`,
    },
    platformHosts: platformHosts(sender, options.publicApiUrl),
    recheck: { ...DEFAULT_RECHECK, ...domainOptions.recheck },
    logger,
    now,
  };
  const signingKeys = new SigningKeyCache(sealingKeys, now);
  const subscribersTransport =
    options.subscribersTransport ?? (options.subscribersUrl ? createServiceTransport(options.subscribersUrl) : undefined);
  const relay = deliveryOutbox({
    storage,
    bus,
    logger,
    clock: now,
    sweepIntervalMs: options.sweepIntervalMs,
    sweepGraceMs: options.sweepGraceMs,
    stalledAfterMs: options.stalledAfterMs,
    passes: [{ name: "sending-domain re-check", run: () => recheckSenderDomains(senderDomainDeps, storage.senderDomainRechecks(), signingKeys) }],
    problems: subscribersTransport ? subscribersProblemSink(subscribersTransport) : undefined,
  });
  const templates = templatesClient(transport);
  const portalTransport = options.portalTransport ?? (options.portalUrl ? createServiceTransport(options.portalUrl) : undefined);
  const recipients = subscribersTransport ? subscribersDirectory(subscribersTransport) : undefined;
  // Only the providers in use are built (an SMTP pool only for live mail over SMTP); test mode never gets near them.
  const providers = Providers.build(providerSetup, { storage, logger, now });
  const liveProvider = providers.liveName;

  // The test-mode quota's counters live in this service's own database: they hold across restarts and replicas.
  // Its wait for the database is the send's own (5 s), not the gateway limiter's 250 ms: a charge counted by this
  // replica alone after a timeout may still land in the database, and a day's quota would carry that miscount for
  // 24 hours (seen as the quota test's refusals on a loaded FerretDB), where a per-second budget forgets it at once.
  const quotaCounters = options.testModeDailyLimit
    ? await DocumentCounterStore.open(store, { collection: "test_mode_quota", logger, clock: now, timeoutMs: 5_000 })
    : undefined;
  const testModeQuotaOf = quotaCounters ? testModeQuota(quotaCounters, options.testModeDailyLimit!, now) : undefined;
  const deps: Deps = { relay, templates, recipients, logger, liveProvider, now, ...(testModeQuotaOf ? { testModeQuota: testModeQuotaOf } : {}) };
  const consumer = new SendConsumer(
    bus,
    storage.eventTenants(),
    {
      relay,
      templates,
      renderers: new RendererCache(compile, options.rendererCacheSize ?? 500),
      providers,
      liveProvider,
      sender,
      feedbackTag: options.feedbackTag ?? "emailsvc",
      signingKeys,
      ...(options.bounceReceiver && options.tokenKeys ? { returnPaths: { keys: options.tokenKeys, host: senderDomainDeps.dnsSettings.returnPathHost } } : {}),
      ...(options.platformDkim ? { platformDkim: { domain: sender.domain, ...options.platformDkim } } : {}),
      unsubscribeUrl:
        options.unsubscribeUrl ??
        (options.tokenKeys
          ? unsubscribeLinks({
              keys: options.tokenKeys,
              publicApiUrl: options.publicApiUrl ?? DEFAULT_PUBLIC_API_URL,
              ...(options.unsubscribeTtlDays !== undefined ? { ttlDays: options.unsubscribeTtlDays } : {}),
            })
          : () => undefined),
      ...subscriberLinkSources(options.tokenKeys, options.preferenceLinks, portalTransport, logger),
      recipients: recipients,
      retry: { ...DEFAULT_RETRY, ...options.retry },
      leaseMs: options.leaseMs ?? 10_000,
      attemptTimeoutMs: options.attemptTimeoutMs ?? 60_000,
      compactAfterErasure: () => storage.compactAfterErasure(),
      outcomeBatches: options.outcomeBatches ?? true,
      logger,
      now,
    },
    logger,
    options.consumerGroup,
    options.sendConcurrency,
  );

  const notificationFetch = options.sesNotifications?.fetchCertificate ?? fetchCertificate;
  const notificationDeps: ProviderNotificationDeps = {
    topics: new Set(options.sesNotifications?.topics ?? []),
    verifier: new SnsSignatureVerifier({ fetchCertificate: notificationFetch }),
    fetch: notificationFetch,
    emails: storage.providerNotificationEmails(),
    scope: (tenant) => storage.forTenant(tenant),
    relay,
    now,
    logger,
  };

  const { server, health } = await startServiceServer({
    services: [delivery.DeliveryService, delivery.SenderDomainService],
    routes: (router) => {
      const scopeOf = (call: CallContext) => ({ call, ...storage.forTenant(tenantKey(call.tenant)) });
      deliveryRoutes(deps, scopeOf, (body) => takeSesNotification(notificationDeps, body))(router);
      senderDomainRoutes(senderDomainDeps, signingKeys, scopeOf)(router);
    },
    ready: () => store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  try {
    await consumer.start();
  } catch (err) {
    await server.close(0);
    throw err;
  }
  relay.start();
  const bounces = options.bounceReceiver ? await startBounces(options, storage, relay, logger, now, server) : undefined;
  logger.info({ url: server.url, provider: liveProvider, sends_to: providerSetup.live.description }, "delivery service listening");
  // Live mail leaves for real: links to this machine or over http would not
  // work for its recipients (packages/tokens, mail-links.ts). Said once, not refused.
  if (liveProvider === "smtp" && options.tokenKeys && !options.unsubscribeUrl) {
    const warning = mailLinkWarning({
      PUBLIC_API_URL: options.publicApiUrl ?? DEFAULT_PUBLIC_API_URL,
      ...(options.preferenceLinks ? { PREFERENCES_URL: options.preferenceLinks.baseUrl } : {}),
    });
    if (warning) logger.warn({ problems: warning.problems }, warning.message);
  }

  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    port: server.port,
    bouncePort: bounces?.port,
    relay,
    close(closeOptions = {}) {
      closing ??= (async () => {
        const graceMs = closeOptions.graceMs ?? 10_000;
        health.setDraining();
        await Promise.all([server.close(graceMs), consumer.stop(graceMs)]);
        await bounces?.close();
        await relay.stop();
        await Promise.all([providers.close(), quotaCounters?.close()]);
      })();
      return closing;
    },
  };
}

/** The bounce receiver, applying each report it takes to the email its return path names; a start that fails stops the gRPC server too. */
async function startBounces(
  options: DeliveryServiceOptions,
  storage: DeliveryStorage,
  relay: OutboxFlusher,
  logger: Logger,
  now: () => number,
  server: { close(graceMs: number): Promise<void> },
): Promise<RunningBounceReceiver> {
  const keys = options.tokenKeys;
  if (!keys) throw new Error("the bounce receiver needs tokenKeys (TOKEN_SIGNING_KEYS): return paths are signed with them");
  const emails = storage.returnPathEmails();
  const deps: ApplyReportDeps = { keys, emails, scope: (tenant) => storage.forTenant(tenant), relay, now, logger };
  // Required here, not imported: its SMTP server (smtp-server) is loaded only by a delivery that receives bounces.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startBounceReceiver } = require("./inbound/bounce-receiver.js") as typeof BounceReceiver;
  try {
    return await startBounceReceiver({ ...options.bounceReceiver!, keys, logger, apply: (arrived) => applyFeedbackReport(deps, arrived) });
  } catch (err) {
    await server.close(0);
    throw err;
  }
}

/** The platform's own hosts, which no tenant may add as a sending domain: EMAIL_FROM's domain and PUBLIC_API_URL's host. */
function platformHosts(sender: Sender, publicApiUrl: string | undefined): string[] {
  const hosts = [sender.domain];
  try {
    hosts.push(new URL(publicApiUrl ?? DEFAULT_PUBLIC_API_URL).hostname.toLowerCase());
  } catch {
    // not a URL: nothing to add
  }
  return hosts;
}

/**
 * `{{preference_center_url}}` and `{{confirmation_url}}` (double opt-in) of a
 * subscriber's mail: a fresh signed link per message, on the account's custom
 * domain once active.
 */
function subscriberLinkSources(keys: KeyRing | undefined, settings: PreferenceLinkSettings | undefined, portal: Transport | undefined, logger: Logger) {
  if (!keys || !settings) return {};
  const bases = new PreferenceLinkBase(settings, portal ? portalDomainLookup(portal) : undefined, {
    onError: (accountId, err) => logger.warn({ account_id: accountId, err: err instanceof Error ? err.message : String(err) }, "custom domain lookup failed; links use PREFERENCES_URL"),
  });
  return {
    async preferenceUrl({ tenant, subscriberId }: { tenant: string; subscriberId: string }) {
      const subject = { ...tenantOfKey(tenant), subscriberId };
      const baseUrl = await bases.forAccount(subject.accountId);
      return mintPreferenceLink(keys, subject, { ...settings, baseUrl }).url;
    },
    async confirmationUrl({ tenant, subscriberId }: { tenant: string; subscriberId: string }) {
      const subject = { ...tenantOfKey(tenant), subscriberId };
      return mintConfirmationLink(keys, subject, await bases.forAccount(subject.accountId)).url;
    },
  };
}
