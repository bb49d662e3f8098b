import type { Middleware } from "koa";
import type { Router } from "@koa/router";
import { findOperation } from "../openapi/lookup.js";
import type { HttpMethod, OpenApiDocument } from "../openapi/types.js";
import { readJsonBody } from "../http/body.js";
import { limitApiKeyRequests } from "../http/rate-limit.js";
import { requireRole } from "../http/auth.js";
import { requiredRole } from "../members/roles.js";
import type { RateLimiter } from "../ratelimit/limiter.js";
import type { RequestValidators } from "../http/validation.js";
import type { Problem } from "../http/problem.js";
import type { GatewayContext, GatewayRouterContext, GatewayState } from "../http/state.js";

export type Handler = (ctx: GatewayRouterContext) => Promise<void>;

export interface RouteOptions {
  /** Largest body of this route; default the kit's (256 KiB). */
  bodyLimitBytes?: number;
  /**
   * What one request counts for against its API-key budgets, from its
   * validated request (a batch: its messages). With it the charge comes
   * after validation, so a refused batch's body has been read (within the
   * body limit), and a request refused by validation counts one; without
   * it, 1, charged before the body is read.
   */
  rateCost?: (ctx: GatewayContext) => number;
  /** Problems of this route as a page for browsers (problem+json when the client asks for JSON): every problem, validation's too. */
  problemPage?: (ctx: GatewayContext, problem: Problem) => void;
}

/** What every route needs from the gateway, built once. */
export interface RouteKit {
  router: Router<GatewayState>;
  doc: OpenApiDocument;
  validators: RequestValidators;
  /** Middleware per security scheme of the document (ApiKeyOrSession: either of the two). */
  auth: {
    ApiKey: Middleware<GatewayState>;
    Session: Middleware<GatewayState>;
    ApiKeyOrSession: Middleware<GatewayState>;
    AdminToken: Middleware<GatewayState>;
    PreferenceToken: Middleware<GatewayState>;
  };
  bodyLimitBytes: number;
  /** Budgets of API-key operations; undefined when rate limiting is off. */
  limiter: RateLimiter | undefined;
}

/** `/subscribers/:id` -> `/subscribers/{id}`. */
export function toOpenApiPath(routerPath: string): string {
  return routerPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/**
 * Registers one operation of the OpenAPI document. The route states its method
 * and path, and start-up fails if they are not the ones the document gives the
 * operation. Authentication follows the operation's `security` (a member's
 * session must also have the role members/roles.ts gives the operation); an
 * API-key or session operation is then charged to its rate-limit budgets (its class in the
 * document; a preference-token operation's class the portal charges, for its
 * page too); then the path, query and header parameters and the JSON body
 * are validated against the document's schemas, in that order, so that the
 * body of an unauthenticated or rate-limited caller is never read.
 */
export function defineRoute(
  kit: RouteKit,
  method: HttpMethod,
  path: string,
  operationId: string,
  handler: Handler,
  options: RouteOptions = {},
): void {
  const found = findOperation(kit.doc, operationId);
  if (!found || found.method !== method || found.path !== toOpenApiPath(path)) {
    throw new Error(`route ${method.toUpperCase()} ${path} does not match operation ${operationId} of the OpenAPI document`);
  }
  const security = found.operation.security ?? kit.doc.security;
  const chain: Array<Middleware<GatewayState>> = [];
  const { problemPage, rateCost } = options;
  let chargeAfterValidation: Middleware<GatewayState> | undefined;
  // With a cost from the body: what a request whose body is refused (malformed, too large) costs, one.
  let chargeRefused: Middleware<GatewayState> | undefined;
  const documentPath = toOpenApiPath(path);
  chain.push(async (ctx, next) => {
    ctx.state.operation = { id: operationId, path: documentPath };
    ctx.state.pathParams = ctx.params;
    await next();
  });
  if (problemPage) {
    chain.push(async (ctx, next) => {
      ctx.state.problemPage = problemPage;
      await next();
    });
  }
  // The requirements are alternatives (OpenAPI), each of one scheme; an API
  // key or a session is one middleware that takes either.
  if (security.some((requirement) => Object.keys(requirement).length > 1)) throw new Error(`operation ${operationId}: a requirement of several schemes is not supported`);
  const schemes = new Set(security.flatMap((requirement) => Object.keys(requirement)));
  const member = schemes.has("Session");
  const keyed = schemes.has("ApiKey") || member;
  if (schemes.has("ApiKey") && member) {
    schemes.delete("ApiKey");
    schemes.delete("Session");
    schemes.add("ApiKeyOrSession");
  }
  if (schemes.size > 1) throw new Error(`operation ${operationId}: schemes ${[...schemes].join(", ")} cannot be combined`);
  for (const scheme of schemes) {
    const middleware = kit.auth[scheme as keyof RouteKit["auth"]];
    if (!middleware) throw new Error(`no middleware for security scheme ${scheme}`);
    chain.push(middleware);
    // What a member's role must be (members/roles.ts); API keys pass.
    if (member) chain.push(requireRole(requiredRole(operationId, method)));
    if (!kit.limiter || (!keyed && scheme !== "PreferenceToken")) continue;
    const cls = found.operation["x-rate-limit-class"];
    if (!cls) throw new Error(`operation ${operationId} has no x-rate-limit-class`);
    if (keyed) {
      if (cls === "privacy") throw new Error(`operation ${operationId}: privacy is a preference-center class`);
      if (rateCost) {
        chargeAfterValidation = limitApiKeyRequests(kit.limiter, cls, rateCost);
        chargeRefused = limitApiKeyRequests(kit.limiter, cls);
      } else {
        chain.push(limitApiKeyRequests(kit.limiter, cls));
      }
    } else if (cls === "send") {
      throw new Error(`operation ${operationId}: send is an API-key class`);
    }
    // A preference-token operation's class is charged by the portal, which
    // serves the same subscriber through its page: one budget for both doors.
  }
  const validators = kit.validators.for(operationId);
  const bodyLimitBytes = options.bodyLimitBytes ?? kit.bodyLimitBytes;
  chain.push(async (ctx, next) => {
    try {
      validators.path(ctx.params);
      ctx.state.query = validators.query(ctx.query);
      ctx.state.headers = validators.headers(ctx.headers);
      if (validators.body) {
        // An optional body left out stays undefined; one that is sent is validated.
        const value = await readJsonBody(ctx.req, bodyLimitBytes, { optional: validators.bodyOptional });
        ctx.state.body = value === undefined ? undefined : validators.body(value);
      }
    } catch (err) {
      // Refused before its cost is known: it is charged as one request (a 429 once the budget is spent),
      // so that malformed batches are not free to send over and over.
      if (chargeRefused) await chargeRefused(ctx, async () => undefined);
      throw err;
    }
    await next();
  });
  if (chargeAfterValidation) chain.push(chargeAfterValidation);
  kit.router.register(path, [method], [...chain, handler], { name: operationId });
}
