import type { ConnectRouter, Transport } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { createServiceTransport, startServiceServer } from "@emailsvc/grpc";
import { type Logger } from "@emailsvc/telemetry";
import { startPageServer, type PageServerOptions, type RunningPageServer } from "./page/server.js";
import { exportSources, linkMailer, subscriberDirectory } from "./rpc/clients.js";
import type { ExportDeps } from "./usecases/export.js";
import type { Policy } from "@emailsvc/ratelimit";
import { portalSettingsRoutes, preferenceCenterRoutes } from "./rpc/routes.js";
import { PortalStorage } from "./storage/settings.js";
import { PageSettingsCache, type SettingsDeps } from "./usecases/settings.js";
import type { DocumentStore } from "@emailsvc/storage";
import type { PortalDeps } from "./usecases/preferences.js";
import { systemDnsLookups } from "@emailsvc/address";
import { DocumentCounterStore } from "@emailsvc/ratelimit";
import { loadPreferenceRateLimits, signupFormConfig, type CustomDomainConfig, type PreferenceRateLimits, type SignupFormConfig } from "./config.js";
import { FormStorage } from "./storage/forms.js";
import type { FormDeps } from "./usecases/forms.js";
import { PublicForms, type SignupDeps } from "./usecases/sign-up.js";
import { publicTagNames, signUpClient } from "./rpc/clients.js";
import { checkLabelledMac, labelledMac } from "@emailsvc/tokens";
import { preferenceBudgets, UNLIMITED, type PreferenceBudgets } from "./usecases/budgets.js";
import { formatPolicy, MemoryCounterStore, PREFERENCE_RATE_CLASSES, type CounterStore } from "@emailsvc/ratelimit";
import { KubernetesDomainRouting } from "./kube/routing.js";
import { DomainStorage } from "./storage/domains.js";
import { ActiveDomainCache, type CnameResolver, type CustomDomainDeps, type DomainRouting } from "./usecases/custom-domains.js";
import { DomainReconciler } from "./usecases/reconcile-domains.js";
import { domainRoutes, formRoutes } from "./rpc/routes.js";

export interface PortalServiceOptions {
  /** The portal's own database (the accounts' page settings). */
  store: DocumentStore;
  logger: Logger;
  /** gRPC port; 0 picks a free one (tests, the embedded mode). */
  port: number;
  host?: string;
  /** The subscribers service: its URL or a ready transport. */
  subscribers: string | Transport;
  /** Delivery and campaigns: their parts of a subscriber's export. */
  delivery: string | Transport;
  campaigns: string | Transport;
  /** Templates: the default template of a fresh link, created in an account that has none. */
  templates: string | Transport;
  /** The portal page (PORTAL_PORT); left out, only the gRPC API runs. */
  page?: Omit<PageServerOptions, "deps" | "exportDeps" | "logger" | "newLink" | "settings"> & {
    /** The page's frame-ancestors where an account set none (PORTAL_FRAME_ANCESTORS). */
    defaultFrameAncestors: readonly string[];
  };
  /** "Send me a new link" on the page: mailed through delivery with the tenant's template `template`. */
  newLinks?: { template: string; perIp: Policy; perAddress: Policy };
  /**
   * Custom portal domains (config.ts, CUSTOM_DOMAIN*); left out: off. Tests
   * may give the Kubernetes side (`routing`, default: the API server of the
   * environment) and the DNS (`resolveCname`, default node:dns with
   * CUSTOM_DOMAIN_DNS_SERVERS).
   */
  customDomains?: CustomDomainConfig & { routing?: DomainRouting; resolveCname?: CnameResolver };
  /** A subscriber's budgets (RATE_LIMIT_PREFERENCE_*, …); default: the defaults, counted in this process. */
  rateLimits?: PreferenceRateLimits;
  /** Public signup forms (PREFERENCES_URL, SIGNUP_*); default: their defaults, posting to the page of `npm start`. */
  signupForms?: SignupFormConfig;
}

/** node:dns's CNAME lookup, through the resolvers given (CUSTOM_DOMAIN_DNS_SERVERS) or the system's. */
export function systemCnameResolver(servers?: readonly string[]): CnameResolver {
  const lookups = systemDnsLookups(servers);
  return (domain) => lookups.resolveCname(domain);
}

export interface RunningPortalService {
  url: string;
  port: number;
  /** The portal page's base URL, when it runs. */
  publicUrl: string | undefined;
  /** Drains: NOT_SERVING, in-flight calls finish. */
  close(): Promise<void>;
}

function transportOf(target: string | Transport): Transport {
  return typeof target === "string" ? createServiceTransport(target) : target;
}

/** The budgets the settings ask for (logged once), and their counters to close; UNLIMITED when RATE_LIMIT=off. */
async function buildBudgets(options: PortalServiceOptions): Promise<{ budgets: PreferenceBudgets; counters?: CounterStore }> {
  const config = options.rateLimits ?? loadPreferenceRateLimits({});
  if (!config.enabled) {
    options.logger.warn("preference budgets are off (RATE_LIMIT=off)");
    return { budgets: UNLIMITED };
  }
  // `mongo`: the portal's own database, shared by its replicas and kept across restarts.
  const counters =
    config.store === "mongo"
      ? await DocumentCounterStore.open(options.store, { timeoutMs: config.storeTimeoutMs, maxKeys: config.maxKeys, logger: options.logger })
      : new MemoryCounterStore({ maxKeys: config.maxKeys });
  options.logger.info(
    {
      store: config.store,
      per_subscriber: Object.fromEntries(PREFERENCE_RATE_CLASSES.map((c) => [c, formatPolicy(config.perSubscriber[c])])),
      per_tenant: Object.fromEntries(PREFERENCE_RATE_CLASSES.map((c) => [c, formatPolicy(config.perTenant[c])])),
    },
    "preference budgets",
  );
  return { budgets: preferenceBudgets(config, counters), counters };
}

export async function startPortalService(options: PortalServiceOptions): Promise<RunningPortalService> {
  const { logger } = options;
  const { budgets, counters } = await buildBudgets(options);
  const deps: PortalDeps = { subscribers: subscriberDirectory(transportOf(options.subscribers)), budgets };
  const storage = new PortalStorage(options.store);
  const settingsDeps: SettingsDeps = { storage, now: Date.now };
  const exportDeps: ExportDeps = {
    sources: exportSources({
      subscribers: transportOf(options.subscribers),
      delivery: transportOf(options.delivery),
      campaigns: transportOf(options.campaigns),
    }),
    budgets,
    logger,
    now: Date.now,
  };
  const domains = options.customDomains;
  const domainStorage = new DomainStorage(options.store);
  if (domains?.enabled) await domainStorage.ensureIndexes();
  const activeDomains = new ActiveDomainCache(domainStorage, Date.now);
  const domainDeps: CustomDomainDeps = {
    storage: domainStorage,
    enabled: domains?.enabled ?? false,
    target: domains?.target ?? "",
    platformHosts: domains?.platformHosts ?? [],
    now: Date.now,
    changed: (_accountId, domain) => activeDomains.forget(domain),
  };
  const signupConfig = options.signupForms ?? signupFormConfig({}, options.page?.port ?? 0);
  const formStorage = new FormStorage(options.store);
  await formStorage.ensureIndexes();
  const publicForms = new PublicForms(formStorage, Date.now);
  const formDeps: FormDeps = { storage: formStorage, tags: publicTagNames(deps.subscribers), now: Date.now, changed: (formId) => publicForms.forget(formId) };
  let reconciler: DomainReconciler | undefined;
  let budget: DocumentCounterStore | undefined;
  if (domains?.enabled) {
    const routing = domains.routing ?? KubernetesDomainRouting.fromEnvironment(domains.kube, domains.kubeAccess);
    // Certificates asked for are counted in the portal's database: the budget holds across replicas and restarts.
    budget = await DocumentCounterStore.open(options.store, { collection: "custom_domain_budget", timeoutMs: 2000, logger });
    reconciler = new DomainReconciler({
      storage: domainStorage,
      routing,
      resolveCname: domains.resolveCname ?? systemCnameResolver(domains.dnsServers),
      budget,
      issueRate: domains.issueRate,
      target: domains.target,
      timing: domains.timing,
      logger,
      now: Date.now,
      changed: domainDeps.changed,
    });
  }
  const { server, health } = await startServiceServer({
    services: [portal.PreferenceCenterService, portal.PortalSettingsService, portal.DomainService, portal.FormService],
    routes: (router: ConnectRouter) => {
      preferenceCenterRoutes(deps, exportDeps)(router);
      portalSettingsRoutes(settingsDeps)(router);
      domainRoutes(domainDeps)(router);
      formRoutes(formDeps, signupConfig.preferencesUrl)(router);
    },
    ready: () => options.store.ping(),
    logger,
    port: options.port,
    host: options.host,
  });
  let page: RunningPageServer | undefined;
  try {
    const newLink = options.newLinks && {
      deps: { subscribers: deps.subscribers, mailer: linkMailer({ delivery: transportOf(options.delivery), templates: transportOf(options.templates) }, options.newLinks.template), logger, now: Date.now },
      perIp: options.newLinks.perIp,
      perAddress: options.newLinks.perAddress,
    };
    if (options.page) {
      const { defaultFrameAncestors, ...pageOptions } = options.page;
      const pageSettings = new PageSettingsCache(settingsDeps, defaultFrameAncestors);
      settingsDeps.changed = (tenant) => pageSettings.forget(tenant);
      const hosts = domains?.enabled ? { preferencesHost: domains.preferencesHost, accountOf: (host: string) => activeDomains.accountOf(host) } : undefined;
      const keys = pageOptions.keys;
      // Signup budgets live with the preference budgets' counters (RATE_LIMIT_STORE: shared by the
      // replicas with `mongo`); with RATE_LIMIT=off there are none, and signups still count in this process:
      // they are the public's, not a load test's.
      const signupDeps: SignupDeps = {
        storage: formStorage,
        signer: {
          sign: (challenge) => labelledMac(keys, "signup_challenge", challenge),
          check: (challenge, signature) => checkLabelledMac(keys, "signup_challenge", challenge, signature),
        },
        signUp: signUpClient(transportOf(options.subscribers)),
        counters: counters ?? new MemoryCounterStore({ maxKeys: 100_000 }),
        limits: signupConfig.limits,
        pow: signupConfig.pow,
        logger,
        now: Date.now,
      };
      page = await startPageServer({
        ...pageOptions,
        deps,
        exportDeps,
        logger,
        settings: pageSettings,
        signup: { deps: signupDeps, forms: publicForms },
        ...(newLink ? { newLink } : {}),
        ...(hosts ? { hosts } : {}),
      });
    }
  } catch (err) {
    await server.close(0);
    await budget?.close();
    await counters?.close();
    throw err;
  }
  reconciler?.start(domains!.reconcileIntervalMs);
  logger.info({ url: server.url, custom_domains: domains?.enabled ? "on" : "off" }, "portal service listening");
  return {
    url: server.url,
    port: server.port,
    publicUrl: page?.url,
    async close() {
      health.setDraining();
      await reconciler?.stop();
      await Promise.all([server.close(), page?.close()]);
      await budget?.close();
      await counters?.close();
    },
  };
}
