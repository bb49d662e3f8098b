import type { Transport } from "@connectrpc/connect";
import type { ServiceName } from "@emailsvc/runtime";
import type { KeyRing, PreferenceLinkBase, PreferenceLinkSettings } from "@emailsvc/tokens";
import type { ApiKeyAuthenticator } from "../accounts/authenticator.js";
import type { GatewayContext } from "../http/state.js";
import type { AccountStore } from "../accounts/store.js";
import type { SenderNames } from "../accounts/sender-names.js";
import type { JsonSchema, ParameterObject, Paths, TagObject } from "../openapi/types.js";
import type { GatewayRouterContext } from "../http/state.js";
import type { RouteKit } from "../routes/define.js";
import type { SessionCookie } from "../http/auth.js";
import type { AuthFailureGuard } from "../http/rate-limit.js";
import type { MemberStore } from "../members/store.js";
import type { PasskeyStore } from "../members/passkeys.js";
import type { MemberMailer } from "../members/mail.js";
import type { AuditLog } from "../members/audit.js";
import type { Logger } from "@emailsvc/telemetry";
import type { SessionAuthenticator } from "../members/sessions.js";
import type { RateLimiter } from "../ratelimit/limiter.js";

/** The services the gateway may be connected to: the platform's catalog (packages/runtime). */
export type { ServiceName };

/** What a resource's routes may use, built once by the gateway. */
export interface ResourceContext {
  /** The transport to a service; undefined when this gateway runs without it (its routes answer 503). */
  transport(service: ServiceName): Transport | undefined;
  /** Keys that verify signed link tokens (TOKEN_SIGNING_KEYS); undefined: the link routes answer 503. */
  tokenKeys: KeyRing | undefined;
  /** Where the preference links the API hands out point, and how long they work. */
  preferenceLinks: PreferenceLinkSettings;
  /** Per account: its active custom domain (asked of the portal, cached 30 s), else PREFERENCES_URL. */
  preferenceLinkBase: PreferenceLinkBase;
  /** Deadline of each service call. */
  timeoutMs: number;
  /**
   * The client's IP address as the gateway can trust it (the peer, or the
   * X-Forwarded-For entry TRUSTED_PROXY_HOPS names): for the audit trail.
   */
  clientIp(ctx: GatewayContext): string;
  /** The gateway's own accounts and API keys. */
  accounts: AccountStore;
  /** Who a tenant's pages say the mail came from (portal setting sender_name, else the account's name), cached briefly. */
  senderNames: SenderNames;
  authenticator: ApiKeyAuthenticator;
  /** Members, their sessions, invitations and password resets. */
  members: MemberStore;
  /** Members' passkeys and their ceremonies' challenges. */
  passkeys: PasskeyStore;
  /** The accounts' audit logs. */
  audit: AuditLog;
  /** Sessions by cookie (cached 2 s; forget a member's on a change). */
  sessions: SessionAuthenticator;
  /** The session cookie's name and whether it is Secure. */
  cookie: SessionCookie;
  /** The rate limiter (sign-in and reset budgets); undefined when RATE_LIMIT=off. */
  limiter: RateLimiter | undefined;
  /** The client address's failed-authentication budget. */
  authGuard: AuthFailureGuard;
  /** PUBLIC_API_URL (default http://localhost:8080): where the dashboard's links point. */
  publicUrl: string;
  /** Mails invitations and password resets through the platform; undefined without the delivery service. */
  mailer: MemberMailer | undefined;
  logger: Logger;
  /** Store reachable, every configured service SERVING, and not draining. */
  ready(): Promise<boolean>;
}

/**
 * One resource of the REST API: its part of the OpenAPI document and the
 * routes that serve it. The document is assembled from the resources
 * (openapi.ts) and the routes are registered from the same list
 * (resources/index.ts), so a new resource is a folder plus one line there.
 */
export interface Resource {
  /** OpenAPI tags its operations use, with their descriptions. */
  tags: TagObject[];
  /** Component schemas it adds; names must be unique across resources. */
  schemas: Record<string, JsonSchema>;
  /** Component parameters it adds. */
  parameters?: Record<string, ParameterObject>;
  /** Component headers it adds (response headers). */
  headers?: Record<string, unknown>;
  paths: Paths;
  /** Requests the platform makes to its users' endpoints, documented as OpenAPI 3.1 `webhooks` (no route serves them). */
  webhooks?: Paths;
  /** Registers one route per operation of `paths` (defineRoute checks the match). */
  routes(kit: RouteKit, context: ResourceContext): void;
}
