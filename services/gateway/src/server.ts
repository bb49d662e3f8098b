import * as http from "node:http";
import * as net from "node:net";
import Koa from "koa";
import { Router } from "@koa/router";
import { createClient, type Transport } from "@connectrpc/connect";
import { health } from "@emailsvc/proto";
import { createServiceTransport } from "@emailsvc/grpc";
import { listen, SERVICE_NAMES, urlHost, serviceUrlVariable, type ServiceName } from "@emailsvc/runtime";
import { type Logger } from "@emailsvc/telemetry";
import type { DocumentStore } from "@emailsvc/storage";
import { listensLocally, loadPreferenceLinkSettings, mailLinkWarning, portalDomainLookup, PreferenceLinkBase, type KeyRing, type PreferenceLinkSettings } from "@emailsvc/tokens";
import { AdminTokenVerifier, ApiKeyAuthenticator, type KeyCacheOptions } from "./accounts/authenticator.js";
import { AccountStore } from "./accounts/store.js";
import { requireAdmin, requireApiKey, requireCredential, requirePreferenceToken, type SessionCookie } from "./http/auth.js";
import { PasskeyStore } from "./members/passkeys.js";
import { MemberStore } from "./members/store.js";
import { grpcMemberMailer } from "./members/mail.js";
import { AuditLog, auditTrail } from "./members/audit.js";
import { DEFAULT_AUDIT_RETENTION_DAYS, startMembersSweep } from "./members/sweep.js";
import { isSecureUrl, SessionAuthenticator, sessionCookieName } from "./members/sessions.js";
import { isClientGone, problems } from "./http/errors.js";
import { authFailureGuard, NO_AUTH_GUARD } from "./http/rate-limit.js";
import { bodyDeadline } from "./http/body-deadline.js";
import { serveDashboard } from "./dashboard/static.js";
import { InFlight, requestContext } from "./http/request-context.js";
import type { GatewayState } from "./http/state.js";
import { RequestValidators } from "./http/validation.js";
import { buildOpenApiDocument, DEFAULT_BODY_LIMIT_BYTES, type OpenApiDocument } from "./openapi.js";
import { RESOURCES, type ResourceContext } from "./resources/index.js";
import type { RouteKit } from "./routes/define.js";
import { formatPolicy, loadRateLimitConfig, RATE_CLASSES, type RateLimitConfig } from "./ratelimit/config.js";
import { RateLimiter } from "./ratelimit/limiter.js";
import { SenderNames } from "./accounts/sender-names.js";
import { auditIp, clientAddress, DocumentCounterStore, MemoryCounterStore } from "@emailsvc/ratelimit";

export interface GatewayDeps {
  /** The gateway's own store (accounts, API keys). Owned by the caller: not closed by the gateway. */
  store: DocumentStore;
  /**
   * The services behind the gateway, by name: a base URL (`<NAME>_URL`, e.g.
   * `http://127.0.0.1:50051`) or a ready transport (tests pass
   * `createRouterTransport`). `subscribers` is required; without another one
   * its routes answer 503 `service_unavailable`.
   */
  services: Partial<Record<ServiceName, string | Transport>>;
  logger: Logger;
  /** ADMIN_TOKEN; when set, only this token opens /admin/v1. Otherwise the stored development token does. */
  adminToken?: string;
  /** PUBLIC_API_URL, announced as the server of the OpenAPI document. */
  publicUrl?: string;
  /** Largest request body; default 256 KiB (template create and update take at least 1 MiB). */
  bodyLimitBytes?: number;
  /** Deadline of each service call; default 10 s. */
  callTimeoutMs?: number;
  /** API key cache; default 5 s, 10 000 keys. */
  keyCache?: KeyCacheOptions;
  /**
   * Keys that verify the signed tokens of unsubscribe links (TOKEN_SIGNING_KEYS,
   * the same the delivery service signs with). Without them /unsubscribe answers 503.
   */
  tokenKeys?: KeyRing;
  /** Where preference links point and how long they work (PREFERENCES_URL, PREFERENCE_TOKEN_TTL_SECONDS); default the page of `npm start`, 7 days. */
  preferenceLinks?: PreferenceLinkSettings;
  /**
   * Rate limits (loadRateLimitConfig, from RATE_LIMIT_* and TRUSTED_PROXY_HOPS).
   * Default: the defaults, on, counted in memory. With `store: "mongo"` the
   * counters live in `store` (collection `rate_limits`), shared by every
   * gateway on that database.
   */
  rateLimit?: RateLimitConfig;
  /** The rate limiter's clock; default Date.now (tests move time by hand). */
  rateLimitClock?: () => number;
  /** The built dashboard served at /dashboard/ (default dashboard/dist of @emailsvc/dashboard). */
  dashboardDir?: string;
  /** AUDIT_LOG_RETENTION_DAYS: how long the audit log keeps an entry (default 400); the hourly sweep also drops expired sessions, invitations and resets. */
  auditRetentionDays?: number;
}

export interface Gateway {
  app: Koa<GatewayState>;
  router: Router<GatewayState>;
  openapi: OpenApiDocument;
  accounts: AccountStore;
  /** Members, sessions, invitations (the dashboard's people). */
  members: MemberStore;
  /** Store reachable, every configured service SERVING, and not draining. */
  ready(): Promise<boolean>;
  /** Readiness turns false; responses from now on close their connection. */
  startDraining(): void;
  /** Resolves when no request is in flight. */
  idle(): Promise<void>;
  readonly inFlight: number;
  /** The rate limiter; undefined when RATE_LIMIT=off. */
  limiter: RateLimiter | undefined;
  /** Stops background work (waits for the audit log's writes in flight; the shared rate-limit store's sweep); the store stays open. */
  close(): Promise<void>;
}

const SERVING = health.HealthCheckResponse_ServingStatus.SERVING;

/**
 * Builds the gateway application: accounts store (indexes ensured), clients
 * (created once), validators (compiled once from the OpenAPI document), routes.
 * Tests use `app.callback()` or `startGateway` on port 0.
 */
export async function buildGateway(deps: GatewayDeps): Promise<Gateway> {
  const { logger } = deps;
  const accounts = new AccountStore(deps.store);
  await accounts.ensureIndexes();
  const authenticator = new ApiKeyAuthenticator(accounts, deps.keyCache);
  const members = new MemberStore(deps.store);
  await members.ensureIndexes();
  const passkeys = new PasskeyStore(deps.store);
  await passkeys.ensureIndexes();
  const audit = new AuditLog(deps.store);
  await audit.ensureIndexes();
  const sweep = startMembersSweep(deps.store, { auditRetentionDays: deps.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS, logger });
  const sessions = new SessionAuthenticator(members);
  const secure = isSecureUrl(deps.publicUrl);
  const cookie: SessionCookie = { name: sessionCookieName(secure), secure };
  const admin = new AdminTokenVerifier(accounts, deps.adminToken);

  const transports = {} as Record<ServiceName, Transport | undefined>;
  for (const name of SERVICE_NAMES) {
    const given = deps.services[name];
    transports[name] = typeof given === "string" ? createServiceTransport(given) : given;
  }
  if (!transports.subscribers) throw new Error("the gateway needs the subscribers service (SUBSCRIBERS_URL)");
  for (const name of SERVICE_NAMES) {
    if (!transports[name]) logger.warn({ service: name }, `no ${name} service configured (${serviceUrlVariable(name)}): its routes answer 503`);
  }
  // Readiness asks every configured service's grpc.health.v1.
  const healthClients = Object.entries(transports)
    .filter((entry): entry is [string, Transport] => entry[1] !== undefined)
    .map(([name, t]) => ({ name, client: createClient(health.Health, t) }));
  const timeoutMs = deps.callTimeoutMs ?? 10_000;

  const limiter = await buildRateLimiter(deps);
  const trustedHops = (deps.rateLimit ?? loadRateLimitConfig({})).trustedProxyHops;
  const guard = limiter ? authFailureGuard(limiter) : NO_AUTH_GUARD;

  const doc = buildOpenApiDocument({ serverUrl: deps.publicUrl });
  const router = new Router<GatewayState>();
  const kit: RouteKit = {
    router,
    doc,
    validators: new RequestValidators(doc),
    auth: {
      ApiKey: requireApiKey(authenticator, guard),
      Session: requireCredential({ sessions: { authenticator: sessions, cookie }, guard }),
      ApiKeyOrSession: requireCredential({ apiKeys: authenticator, sessions: { authenticator: sessions, cookie }, guard }),
      AdminToken: requireAdmin(admin, guard),
      PreferenceToken: requirePreferenceToken(deps.tokenKeys, guard),
    },
    bodyLimitBytes: deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    limiter,
  };

  let draining = false;
  let lastReady: boolean | undefined;
  const ready = async (): Promise<boolean> => {
    if (draining) return false;
    const [storeUp, ...servicesUp] = await Promise.all([
      deps.store.ping().catch(() => false),
      ...healthClients.map(({ client }) =>
        client
          .check({ service: "" }, { timeoutMs: 2000 })
          .then((res) => res.status === SERVING)
          .catch(() => false),
      ),
    ]);
    const isReady = storeUp && servicesUp.every(Boolean);
    // Logged on change only: probes run every few seconds.
    if (isReady !== lastReady) {
      lastReady = isReady;
      const services = Object.fromEntries(healthClients.map(({ name }, i) => [name, servicesUp[i]]));
      logger[isReady ? "info" : "warn"]({ store: storeUp, ...services }, isReady ? "ready" : "not ready");
    }
    return isReady;
  };

  const preferenceLinks = deps.preferenceLinks ?? loadPreferenceLinkSettings({});
  const context: ResourceContext = {
    transport: (service) => transports[service],
    timeoutMs,
    clientIp: (ctx) => auditIp(clientAddress(ctx.req.socket.remoteAddress, ctx.get("x-forwarded-for"), trustedHops)),
    accounts,
    senderNames: new SenderNames(accounts, transports.portal, timeoutMs),
    authenticator,
    members,
    passkeys,
    audit,
    sessions,
    cookie,
    limiter,
    authGuard: guard,
    publicUrl: deps.publicUrl ?? "http://localhost:8080",
    mailer: transports.delivery ? grpcMemberMailer({ delivery: transports.delivery, templates: transports.templates }, timeoutMs) : undefined,
    logger,
    ready,
    tokenKeys: deps.tokenKeys,
    preferenceLinks,
    // The portal is asked for an account's active custom domain (optional: without it, PREFERENCES_URL).
    preferenceLinkBase: new PreferenceLinkBase(preferenceLinks, transports.portal ? portalDomainLookup(transports.portal) : undefined, {
      onError: (accountId, err) => logger.warn({ account_id: accountId, err: err instanceof Error ? err.message : String(err) }, "custom domain lookup failed; links use PREFERENCES_URL"),
    }),
  };
  for (const resource of RESOURCES) resource.routes(kit, context);

  const inFlight = new InFlight();
  const app = new Koa<GatewayState>();
  app.use(bodyDeadline());
  app.use(requestContext(logger, inFlight, () => draining));
  // Outside the problems: a refused change is logged with its status.
  app.use(auditTrail(audit, logger, context.clientIp));
  app.use(problems(logger));
  app.use(serveDashboard(logger, deps.dashboardDir));
  app.use(router.routes());
  // Reached only when no route took the request: problems() writes the body.
  app.use(methodNotAllowed(router));
  // Errors outside the middleware chain: mostly a client that hung up (its
  // connection reset or ended mid-request), which is no fault of ours and is
  // already in the access line as 499; anything else is worth a warning.
  app.on("error", (err: Error & { code?: unknown }) => {
    const fields = { err: { name: err.name, message: err.message, code: typeof err.code === "string" ? err.code : undefined } };
    if (isClientGone(err)) logger.debug(fields, "client went away");
    else logger.warn(fields, "response error");
  });

  return {
    app,
    router,
    openapi: doc,
    accounts,
    members,
    ready,
    startDraining: () => {
      draining = true;
    },
    idle: () => inFlight.idle(),
    get inFlight() {
      return inFlight.size;
    },
    limiter,
    close: async () => {
      await sweep.stop();
      await audit.flush();
      await limiter?.close();
    },
  };
}

/** The limiter the settings ask for (logged once); undefined when RATE_LIMIT=off. */
async function buildRateLimiter(deps: GatewayDeps): Promise<RateLimiter | undefined> {
  const config = deps.rateLimit ?? loadRateLimitConfig({});
  if (!config.enabled) {
    deps.logger.warn("rate limiting is off (RATE_LIMIT=off)");
    return undefined;
  }
  const counters =
    config.store === "mongo"
      ? await DocumentCounterStore.open(deps.store, { timeoutMs: config.storeTimeoutMs, maxKeys: config.maxKeys, logger: deps.logger })
      : new MemoryCounterStore({ maxKeys: config.maxKeys });
  deps.logger.info(
    {
      store: config.store,
      per_key: Object.fromEntries(RATE_CLASSES.map((c) => [c, formatPolicy(config.perKey[c])])),
      per_tenant: Object.fromEntries(RATE_CLASSES.map((c) => [c, formatPolicy(config.perTenant[c])])),
      auth_failures_per_address: formatPolicy(config.authFailures),
      unsubscribe_per_address: formatPolicy(config.unsubscribePerAddress),
      unsubscribe_per_link: formatPolicy(config.unsubscribePerLink),
      trusted_proxy_hops: config.trustedProxyHops,
    },
    "rate limits",
  );
  return new RateLimiter(config, counters, deps.rateLimitClock);
}

/**
 * A path the router knows with a method it does not serve: 405 with `Allow`
 * (RFC 9110), whatever the method, also one the router has never heard of
 * (koa-router's allowedMethods answers those 501). OPTIONS answers 204 with
 * `Allow`. An unknown path stays 404.
 */
function methodNotAllowed(router: Router<GatewayState>): Koa.Middleware<GatewayState> {
  return async (ctx) => {
    const matched = router.match(ctx.path, ctx.method).path;
    if (matched.length === 0) return;
    // The most literal paths only, as the document reads them: on
    // /api/v1/emails/send that is the send (POST), not /emails/{id} (GET).
    const fewest = Math.min(...matched.map((layer) => layer.paramNames.length));
    const layers = matched.filter((layer) => layer.paramNames.length === fewest);
    const allowed = [...new Set(layers.flatMap((layer) => layer.methods))];
    ctx.set("Allow", allowed.join(", "));
    ctx.status = ctx.method === "OPTIONS" ? 204 : 405;
  };
}

export interface StartGatewayOptions extends GatewayDeps {
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1; containers pass 0.0.0.0. */
  host?: string;
  /** How long close() waits for in-flight requests before cutting connections; default 20 s. */
  drainTimeoutMs?: number;
  /**
   * How long close() keeps idle keep-alive connections open once no request is
   * in flight (default 0: ended at once). Ending an idle connection races a
   * client that is writing its next request on it: the client sees the
   * connection reset, and its request fails without having reached the
   * server. Kept open a little, a connection in use gets its next response
   * with `Connection: close` and the client opens a new one, which a Service
   * sends to another replica. The separate process (Kubernetes) sets it.
   */
  idleConnectionGraceMs?: number;
}

export interface RunningGateway {
  port: number;
  url: string;
  gateway: Gateway;
  /**
   * Graceful stop: readiness turns 503 at once, no new connections are taken,
   * in-flight requests finish (up to drainTimeoutMs), then connections close.
   * The store and an injected transport stay open: their owner closes them.
   */
  close(): Promise<void>;
}

export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  const gateway = await buildGateway(options);
  const server = http.createServer(gateway.app.callback());
  // A slow client may not hold a request open forever: its body has 30 s to arrive
  // (http/body-deadline.ts, where an upload route may allow more); Node's own
  // requestTimeout, the same for every route, is off.
  server.requestTimeout = 0;
  // An idle kept-alive connection stays open longer than the load balancers in front usually keep theirs (60 s on
  // the common ones): with Node's 5 s, a balancer or a client pool reusing a connection just as the gateway closed
  // it got a reset (a 502, or ECONNRESET in a client). Node wants the headers timeout above it.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  const host = options.host ?? "127.0.0.1";
  const port = await listen(server, options.port, host);
  const drainTimeoutMs = options.drainTimeoutMs ?? 20_000;
  const idleConnectionGraceMs = options.idleConnectionGraceMs ?? 0;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      gateway.startDraining();
      // Stops accepting. http.Server's own close() would also end the idle
      // keep-alive connections at once; net.Server's leaves them, and each
      // connection in use ends after its next response (Connection: close
      // while draining). `closed` resolves once every connection has ended.
      const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, drainTimeoutMs);
        timer.unref();
      });
      await Promise.race([gateway.idle(), deadline]);
      if (idleConnectionGraceMs > 0) {
        let graceTimer: NodeJS.Timeout | undefined;
        await Promise.race([closed, deadline, new Promise<void>((resolve) => (graceTimer = setTimeout(resolve, idleConnectionGraceMs)))]);
        clearTimeout(graceTimer);
      }
      server.closeIdleConnections();
      await Promise.race([closed, deadline]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
      await gateway.close();
      options.logger.info({ in_flight: gateway.inFlight }, "gateway stopped");
    })());

  options.logger.info({ port, host }, "gateway listening");
  // Serving the network (not `npm start`'s 127.0.0.1): the links of mail lead
  // here (PUBLIC_API_URL) and to the page of the preference links it hands
  // out (PREFERENCES_URL); say once if recipients could not follow them.
  if (!listensLocally(host)) {
    const warning = mailLinkWarning({ PUBLIC_API_URL: options.publicUrl, PREFERENCES_URL: (options.preferenceLinks ?? loadPreferenceLinkSettings({})).baseUrl });
    if (warning) options.logger.warn({ problems: warning.problems }, warning.message);
  }
  return { port, url: `http://${urlHost(host)}:${port}`, gateway, close };
}
