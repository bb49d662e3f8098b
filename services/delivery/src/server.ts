import type { Transport } from "@connectrpc/connect";
import type { EventBus } from "@emailsvc/events";
import type { Outbox } from "@emailsvc/outbox";
import { delivery } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer, tenantKey, type CallContext, type Logger } from "@emailsvc/runtime";
import { AcrossTenants, AnyTenant, type DocumentStore } from "@emailsvc/storage";
import type { ProviderName } from "./domain/email.js";
import { DEFAULT_FROM, parseSender, type Sender } from "./domain/message.js";
import { DEFAULT_RETRY, type EmailProvider, type RetryPolicy } from "./domain/provider.js";
import { RendererCache, type CompileRenderer } from "./domain/renderer.js";
import { DELIVERY_TOPICS, deliveryOutbox } from "./messaging/outbox.js";
import { SendConsumer, type RepositoriesOfEvent } from "./messaging/send-consumer.js";
import { StalledSweep } from "./messaging/stalled-sweep.js";
import { SandboxProvider } from "./providers/sandbox.js";
import { DEFAULT_SMTP_TIMEOUTS, SmtpProvider, parseSmtpUrl, type SmtpSettings, type SmtpTimeouts } from "./providers/smtp.js";
import { deliveryRoutes } from "./rpc/services.js";
import { templatesClient } from "./rpc/templates-client.js";
import { subscribersDirectory } from "./rpc/subscribers-client.js";
import type { EmailDoc } from "./storage/documents.js";
import { COLLECTIONS } from "./storage/repositories.js";
import { compileRenderer } from "@emailsvc/templates/render";
import type { UnsubscribeUrlSource } from "./usecases/deliver-email.js";
import type { Deps, Scope } from "./usecases/deps.js";

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
  /** EMAIL_PROVIDER for live-mode keys (default sandbox). Test-mode keys always use the sandbox. */
  provider?: ProviderName;
  /** SMTP_URL, parsed or as text; required when provider is smtp. */
  smtp?: SmtpSettings | string;
  smtpTimeouts?: SmtpTimeouts;
  /** EMAIL_FROM (default `Email Platform <no-reply@localhost>`). */
  from?: string | Sender;
  /** compileRenderer of @emailsvc/templates (the default, loaded by name); tests pass a stand-in. */
  renderer?: CompileRenderer;
  /** One-click unsubscribe URL of a marketing recipient; none known yet (seam for the portal). */
  unsubscribeUrl?: UnsubscribeUrlSource;
  /** Give-up rules (default 8 answered failures; 24 h of an unreachable provider). */
  retry?: Partial<RetryPolicy>;
  /**
   * How long a send attempt's claim holds an email unrenewed (default 10 s):
   * renewed every third of it while the attempt runs, so an attempt that died
   * frees its email within this time.
   */
  leaseMs?: number;
  /** The longest one send attempt may take (default 60 s); tests shorten it. */
  attemptTimeoutMs?: number;
  /** Outbox and stalled-email sweeps; tests shorten them. */
  sweepIntervalMs?: number;
  sweepGraceMs?: number;
  stalledAfterMs?: number;
  /** Consumer group of the consumer of email.send.requested and subscriber.deleted (default `delivery`; tests sharing a Kafka use their own). */
  consumerGroup?: string;
  /** Compiled templates kept (default 500 versions). */
  rendererCacheSize?: number;
}

export interface RunningDeliveryService {
  url: string;
  port: number;
  /** The outbox: its backlog (a metric's value), its sweep. */
  outbox: Outbox<EmailDoc>;
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
  const liveProvider = options.provider ?? "sandbox";
  const smtpSettings = typeof options.smtp === "string" ? parseSmtpUrl(options.smtp) : options.smtp;
  if (liveProvider === "smtp" && !smtpSettings) throw new Error("provider smtp needs SMTP settings (SMTP_URL)");
  const sender = typeof options.from === "object" ? options.from : parseSender(options.from ?? DEFAULT_FROM);
  const compile: CompileRenderer = options.renderer ?? compileRenderer;

  const [collections] = await Promise.all([COLLECTIONS.open(store), bus.ensureTopics([...DELIVERY_TOPICS])]);
  const outbox = deliveryOutbox(collections.emails, bus, logger, { sweepIntervalMs: options.sweepIntervalMs, sweepGraceMs: options.sweepGraceMs });
  // Where tenancy is crossed, each by name (everything else gets one tenant's repositories):
  // the stalled sweep looks for stalled mail in every tenant; the consumer opens the
  // repositories of the tenant its event names; the sandbox keeps a message under its email's tenant.
  const stalled = new StalledSweep({
    emails: new AcrossTenants(collections.emails, "the stalled sweep looks for stalled mail in every tenant"),
    outbox,
    logger,
    clock: Date.now,
    stalledAfterMs: options.stalledAfterMs ?? 10 * 60_000,
    intervalMs: options.sweepIntervalMs ?? 2000,
  });
  const eventTenant = {
    emails: new AnyTenant(collections.emails, "the consumer acts for the tenant its event's checked meta names"),
    sandbox: new AnyTenant(collections.sandbox, "the consumer acts for the tenant its event's checked meta names"),
  };
  const repositoriesOfEvent: RepositoriesOfEvent = (meta) => ({ emails: eventTenant.emails.of(meta.tenant), sandbox: eventTenant.sandbox.of(meta.tenant) });
  const templates = templatesClient(transport);
  const subscribersTransport =
    options.subscribersTransport ?? (options.subscribersUrl ? createServiceTransport(options.subscribersUrl) : undefined);
  const recipients = subscribersTransport ? subscribersDirectory(subscribersTransport) : undefined;
  const sandbox = new SandboxProvider(new AnyTenant(collections.sandbox, "the sandbox keeps each message under its email's tenant"));
  // The SMTP pool exists only for live mode with EMAIL_PROVIDER=smtp; test mode never gets near it.
  const smtp: EmailProvider | undefined =
    liveProvider === "smtp" && smtpSettings ? new SmtpProvider(smtpSettings, options.smtpTimeouts ?? DEFAULT_SMTP_TIMEOUTS) : undefined;

  const deps: Deps = { outbox, templates, recipients, logger, liveProvider, now: Date.now };
  // The tenant of a call comes from its authenticated headers; the use case
  // gets that tenant's repositories and nothing else.
  const scopeOf = (call: CallContext): Scope => {
    const tenant = tenantKey(call.tenant);
    return { call, tenant, ...COLLECTIONS.forTenant(collections, tenant) };
  };
  const consumer = new SendConsumer(
    bus,
    {
      outbox,
      templates,
      renderers: new RendererCache(compile, options.rendererCacheSize ?? 500),
      providers: { sandbox, smtp },
      liveProvider,
      sender,
      unsubscribeUrl: options.unsubscribeUrl ?? (async () => undefined),
      recipients: recipients,
      retry: { ...DEFAULT_RETRY, ...options.retry },
      leaseMs: options.leaseMs ?? 10_000,
      attemptTimeoutMs: options.attemptTimeoutMs ?? 60_000,
      logger,
      now: Date.now,
    },
    repositoriesOfEvent,
    logger,
    options.consumerGroup,
  );

  const { server, health } = await startServiceServer({
    services: [delivery.DeliveryService],
    routes: deliveryRoutes(deps, scopeOf),
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
  outbox.start();
  stalled.start();
  logger.info({ url: server.url, provider: liveProvider }, "delivery service listening");

  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    port: server.port,
    outbox,
    close(closeOptions = {}) {
      closing ??= (async () => {
        const graceMs = closeOptions.graceMs ?? 10_000;
        health.setDraining();
        await Promise.all([server.close(graceMs), consumer.stop(graceMs)]);
        await Promise.all([stalled.stop(), outbox.stop()]);
        await Promise.all([sandbox.close(), smtp?.close()]);
      })();
      return closing;
    },
  };
}
