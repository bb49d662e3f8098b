// The dashboard's only way to the platform: the public REST API (/api/v1),
// through openapi-fetch typed by schema.d.ts (generated from the gateway's
// OpenAPI document). The session cookie goes along by itself (same origin,
// HttpOnly: this code never sees it); every unsafe request carries the
// session's CSRF token, and every request the mode the member is looking at.

import createClient from "openapi-fetch";
import type { paths } from "./schema";

export type Mode = "live" | "test";

const MODE_KEY = "emailsvc.mode";
let csrfToken = "";
let mode: Mode = readMode();

function readMode(): Mode {
  try {
    return localStorage.getItem(MODE_KEY) === "test" ? "test" : "live";
  } catch {
    return "live";
  }
}

export function currentMode(): Mode {
  return mode;
}

export function setMode(next: Mode): void {
  mode = next;
  try {
    localStorage.setItem(MODE_KEY, next);
  } catch {
    // Private windows may refuse storage: the mode then lasts as long as the page.
  }
}

/** The session's CSRF token (from the sign-in or GET /api/v1/session answer). */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

/** Called when the API answers 401 to a signed-in page: the session ended (expired, signed out elsewhere, member removed). */
let onSessionEnded: () => void = () => {};
export function whenSessionEnds(handler: () => void): void {
  onSessionEnded = handler;
}

export const api = createClient<paths>({ baseUrl: location.origin, credentials: "same-origin" });

api.use({
  onRequest({ request }) {
    request.headers.set("X-Mode", mode);
    if (!SAFE.has(request.method) && csrfToken) request.headers.set("X-CSRF-Token", csrfToken);
    return request;
  },
  onResponse({ response, request }) {
    if (response.status === 401 && !new URL(request.url).pathname.startsWith("/api/v1/session")) onSessionEnded();
    return response;
  },
});

/** A field of a problem's `errors`. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** An answer other than 2xx, as the API's problem+json says it (RFC 9457). */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: FieldProblem[] = [],
    readonly retryAfterSeconds?: number,
  ) {
    super(detail || code);
  }

  /** The message of one field, if the problem names it. */
  field(name: string): string | undefined {
    return this.errors.find((e) => e.field === name)?.message;
  }
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * The data of a successful answer; otherwise throws an ApiProblem (also for
 * a network failure, as status 0). Use: `const page = await ok(api.GET("/api/v1/tags", {}))`.
 */
export async function ok<T>(pending: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await pending;
  } catch (err) {
    throw new ApiProblem(0, "network_error", err instanceof Error ? err.message : String(err));
  }
  if (answer.response.ok) return answer.data as T;
  throw toProblem(answer.response, answer.error);
}

function toProblem(response: Response, body: unknown): ApiProblem {
  const problem = (typeof body === "object" && body !== null ? body : {}) as { code?: unknown; detail?: unknown; title?: unknown; errors?: unknown };
  const errors = Array.isArray(problem.errors)
    ? problem.errors.filter((e): e is FieldProblem => typeof e === "object" && e !== null && typeof (e as FieldProblem).field === "string")
    : [];
  const retry = Number(response.headers.get("retry-after"));
  return new ApiProblem(
    response.status,
    typeof problem.code === "string" ? problem.code : `http_${response.status}`,
    typeof problem.detail === "string" ? problem.detail : typeof problem.title === "string" ? problem.title : response.statusText,
    errors,
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}
