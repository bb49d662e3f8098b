import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "@emailsvc/proto";
import { readError } from "@emailsvc/runtime";

// Every error leaves the gateway as application/problem+json (RFC 9457) with a
// stable machine `code`. Handlers throw Problem; errors of service calls
// (ConnectError) are translated by one table below; anything else is a bug and
// becomes a generic 500 whose details only reach the log.

export interface FieldError {
  field: string;
  message: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  request_id: string;
  errors?: FieldError[];
  existing_id?: string;
}

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly extra: { errors?: FieldError[]; existingId?: string; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = "Problem";
  }
}

// Titles are fixed per code (RFC 9457: the title does not change between
// occurrences of one type); unknown codes fall back to the status phrase.
const TITLES: Record<string, string> = {
  validation_failed: "Invalid request",
  invalid_json: "Malformed JSON body",
  json_too_deep: "JSON nested too deeply",
  unsupported_media_type: "Unsupported content type",
  payload_too_large: "Request body too large",
  missing_api_key: "API key required",
  invalid_api_key: "Invalid API key",
  missing_admin_token: "Admin token required",
  invalid_admin_token: "Invalid admin token",
  not_found: "Not found",
  method_not_allowed: "Method not allowed",
  email_taken: "Email address already in use",
  subscriber_suppressed: "Email address suppressed after an erasure",
  internal: "Internal error",
  unavailable: "Service unavailable",
  deadline_exceeded: "Upstream timeout",
  not_ready: "Not ready",
  service_unavailable: "Service not available",
  rate_limited: "Too many requests",
  // Custom portal domains (the portal's DomainService, the plan check here).
  plan_required: "Plan does not include this",
  live_key_required: "Live-mode key required",
  invalid_domain: "Invalid domain",
  domain_taken: "Domain already claimed",
  custom_domain_not_found: "No custom domain",
  custom_domains_not_enabled: "Custom domains not enabled",
  // Codes of the templates and delivery services.
  template_not_found: "Template not found",
  slug_taken: "Slug already in use",
  invalid_mjml: "Invalid MJML",
  invalid_template: "Invalid template",
  mjml_too_large: "MJML too large",
  variables_too_large: "Variables too large",
  concurrent_update: "Concurrent update",
  idempotency_key_reused: "Idempotency key reused",
  sandbox_message_not_found: "No sandboxed message",
  sandbox_message_expired: "Sandboxed message no longer kept",
  // The test-mode quota (TEST_MODE_DAILY_LIMIT), of delivery and of campaigns.
  test_mode_quota_exceeded: "Test-mode quota used up",
  test_mode_campaign_too_large: "Campaign too large for test mode",
  // Codes of the campaigns service (and the subscribers' audiences it asks).
  unknown_tags: "Unknown tags",
  campaign_not_draft: "Campaign is not a draft",
  campaign_state_conflict: "Campaign state does not allow this",
  subscribers_unavailable: "Subscribers service unavailable",
  templates_unavailable: "Templates service unavailable",
};

const STATUS_PHRASES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

export function problemBody(problem: Problem, requestId: string): ProblemBody {
  const body: ProblemBody = {
    type: `urn:emailsvc:problem:${problem.code}`,
    title: TITLES[problem.code] ?? STATUS_PHRASES[problem.status] ?? "Error",
    status: problem.status,
    code: problem.code,
    detail: problem.detail,
    request_id: requestId,
  };
  if (problem.extra.errors && problem.extra.errors.length > 0) body.errors = problem.extra.errors;
  if (problem.extra.existingId) body.existing_id = problem.extra.existingId;
  return body;
}

// The one Connect code -> HTTP status table. `detail` is used when the service
// attached no ErrorDetail: then the message came from the transport or the
// framework (addresses, stack-ish text) and must not reach the client.
const CODE_TABLE: Partial<Record<Code, { status: number; code: string; detail: string }>> = {
  [Code.InvalidArgument]: { status: 400, code: "validation_failed", detail: "The request is invalid." },
  [Code.Unauthenticated]: { status: 401, code: "unauthenticated", detail: "The request is not authenticated." },
  [Code.PermissionDenied]: { status: 403, code: "forbidden", detail: "The request is not allowed." },
  [Code.NotFound]: { status: 404, code: "not_found", detail: "The resource does not exist." },
  [Code.AlreadyExists]: { status: 409, code: "conflict", detail: "The resource already exists." },
  [Code.ResourceExhausted]: { status: 413, code: "payload_too_large", detail: "The request is too large." },
  [Code.Unavailable]: { status: 503, code: "unavailable", detail: "A service is unavailable; retry later." },
  [Code.DeadlineExceeded]: { status: 504, code: "deadline_exceeded", detail: "A service did not answer in time." },
};
const INTERNAL = { status: 500, code: "internal", detail: "An internal error occurred." };

/**
 * Translates the error of a service call. Returns `internal: true` when the
 * caller should log it (the client only learns that something went wrong).
 */
export function problemFromConnect(err: ConnectError): { problem: Problem; internal: boolean } {
  const entry = CODE_TABLE[err.code];
  if (!entry) return { problem: new Problem(INTERNAL.status, INTERNAL.code, INTERNAL.detail), internal: true };
  // The service attaches an ErrorDetail only to errors it raised on purpose
  // (AppError): their code and message are written for API users. Without it
  // the message came from the transport and stays in the gateway.
  if (err.findDetails(ErrorDetailSchema).length === 0) {
    return { problem: new Problem(entry.status, entry.code, entry.detail), internal: entry.status >= 500 };
  }
  const info = readError(err);
  // RESOURCE_EXHAUSTED is both "too large" and a service's quota (the
  // test-mode quota); only a quota says when to try again.
  const quota = err.code === Code.ResourceExhausted && info.retryAfterSeconds !== undefined;
  return {
    problem: new Problem(quota ? 429 : entry.status, info.errorCode, info.message || entry.detail, {
      errors: info.fieldViolations.map((v) => ({ field: v.field, message: v.description })),
      existingId: info.existingId,
      ...(quota ? { headers: { "Retry-After": String(Math.max(1, info.retryAfterSeconds!)) } } : {}),
    }),
    internal: entry.status >= 500 && !SETTLED_ANSWERS.has(info.errorCode),
  };
}

/**
 * 5xx answers a service gives on purpose about how this deployment is set up,
 * not about a failure: answered the same way every time, nothing for an
 * operator to look into per request, so not logged as errors.
 */
const SETTLED_ANSWERS = new Set(["custom_domains_not_enabled"]);

/** Any thrown value -> Problem; `internal` says whether to log it as a bug or outage. */
export function toProblem(err: unknown): { problem: Problem; internal: boolean } {
  if (err instanceof Problem) return { problem: err, internal: false };
  if (err instanceof ConnectError) {
    // The call was cancelled because the client went away (callOptions): no
    // one reads this answer, and it is no fault of ours worth an error log.
    if (err.code === Code.Canceled) return { problem: new Problem(503, "canceled", "The request was cancelled."), internal: false };
    return problemFromConnect(err);
  }
  // http-errors style errors (thrown by Koa or a library) carry `status`; only
  // client errors are shown, with a generic text.
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return { problem: new Problem(status, "bad_request", STATUS_PHRASES[status] ?? "Bad request"), internal: false };
  }
  return { problem: new Problem(INTERNAL.status, INTERNAL.code, INTERNAL.detail), internal: true };
}
