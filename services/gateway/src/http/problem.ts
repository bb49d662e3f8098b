import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { RATE_LIMIT_HEADER_NAMES } from "@emailsvc/ratelimit";
import { ERROR_CODES, isErrorCode, type ErrorCode } from "./error-codes.js";

// Every error leaves the gateway as application/problem+json (RFC 9457) with a
// stable machine `code` of the one table (error-codes.ts). Handlers throw
// Problem; errors of service calls (ConnectError) are translated by the
// Connect-code table below; anything else is a bug and becomes a generic 500
// whose details only reach the log.

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

/**
 * An answer other than success. A throw site names a code of the one table
 * (http/error-codes.ts); the status and title follow from it.
 */
export class Problem extends Error {
  readonly status: number;
  /** A code of the table, except for Problem.unlisted. */
  readonly code: string;

  constructor(
    code: ErrorCode,
    readonly detail: string,
    readonly extra: ProblemExtra = {},
  ) {
    super(detail);
    this.name = "Problem";
    this.code = code;
    this.status = ERROR_CODES[code].status;
  }

  /**
   * A service's code the table does not list yet (a service newer than this
   * gateway): passed on as it is, with the status of its Connect code and
   * the status phrase as title. test/error-codes.test.ts keeps the table
   * complete for the services in this repository.
   */
  static unlisted(status: number, code: string, detail: string, extra: ProblemExtra = {}): Problem {
    const problem = new Problem("internal", detail, extra);
    const writable = problem as { -readonly [K in "status" | "code"]: Problem[K] };
    writable.status = status;
    writable.code = code;
    return problem;
  }
}

export interface ProblemExtra {
  errors?: FieldError[];
  existingId?: string;
  headers?: Record<string, string>;
}

const STATUS_PHRASES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  422: "Unprocessable Content",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  499: "Client Closed Request",
  500: "Internal Server Error",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** The title of a code: the table's, or the status phrase for a code it does not list. */
export function problemTitle(code: string, status: number): string {
  return isErrorCode(code) ? ERROR_CODES[code].title : (STATUS_PHRASES[status] ?? "Error");
}

export function problemBody(problem: Problem, requestId: string): ProblemBody {
  const body: ProblemBody = {
    type: `urn:emailsvc:problem:${problem.code}`,
    title: problemTitle(problem.code, problem.status),
    status: problem.status,
    code: problem.code,
    detail: problem.detail,
    request_id: requestId,
  };
  if (problem.extra.errors && problem.extra.errors.length > 0) body.errors = problem.extra.errors;
  if (problem.extra.existingId) body.existing_id = problem.extra.existingId;
  return body;
}

// The one Connect code -> problem table (the status is the code's, in
// error-codes.ts). `detail` is used when the service attached no
// ErrorDetail: then the message came from the transport or the framework
// (addresses, stack-ish text) and must not reach the client.
const CODE_TABLE: Partial<Record<Code, { code: ErrorCode; detail: string }>> = {
  [Code.InvalidArgument]: { code: "validation_failed", detail: "The request is invalid." },
  [Code.Unauthenticated]: { code: "unauthenticated", detail: "The request is not authenticated." },
  [Code.PermissionDenied]: { code: "forbidden", detail: "The request is not allowed." },
  [Code.NotFound]: { code: "not_found", detail: "The resource does not exist." },
  [Code.AlreadyExists]: { code: "conflict", detail: "The resource already exists." },
  [Code.FailedPrecondition]: { code: "unprocessable", detail: "The request cannot be carried out in the account's present state." },
  [Code.ResourceExhausted]: { code: "payload_too_large", detail: "The request is too large." },
  [Code.Unavailable]: { code: "unavailable", detail: "A service is unavailable; retry later." },
  [Code.DeadlineExceeded]: { code: "deadline_exceeded", detail: "A service did not answer in time." },
};
const internalProblem = () => new Problem("internal", "An internal error occurred.");

/**
 * Translates the error of a service call. Returns `internal: true` when the
 * caller should log it (the client only learns that something went wrong).
 */
export function problemFromConnect(err: ConnectError): { problem: Problem; internal: boolean } {
  const entry = CODE_TABLE[err.code];
  if (!entry) return { problem: internalProblem(), internal: true };
  const status = ERROR_CODES[entry.code].status;
  // The service attaches an ErrorDetail only to errors it raised on purpose
  // (AppError): their code and message are written for API users. Without it
  // the message came from the transport and stays in the gateway.
  if (err.findDetails(ErrorDetailSchema).length === 0) {
    return { problem: new Problem(entry.code, entry.detail), internal: status >= 500 };
  }
  const info = readError(err);
  const extra: ProblemExtra = {
    errors: info.fieldViolations.map((v) => ({ field: v.field, message: v.description })),
    existingId: info.existingId,
  };
  // RESOURCE_EXHAUSTED is both "too large" and a spent budget or quota of a
  // service's (the portal's preference budgets, the test-mode quota); only
  // the latter carries a Retry-After, and its RateLimit headers are passed on.
  const spent = err.code === Code.ResourceExhausted && info.retryAfterSeconds !== undefined;
  if (spent) extra.headers = rateLimitHeadersOf(err.metadata);
  const detail = info.message || entry.detail;
  // A listed code keeps the status of its kind (test/error-codes.test.ts checks that they agree).
  const problem = isErrorCode(info.errorCode)
    ? new Problem(info.errorCode, detail, extra)
    : Problem.unlisted(spent ? ERROR_CODES.rate_limited.status : status, info.errorCode, detail, extra);
  return { problem, internal: problem.status >= 500 && !SETTLED_ANSWERS.has(info.errorCode) };
}

function rateLimitHeadersOf(metadata: Headers): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of RATE_LIMIT_HEADER_NAMES) {
    const value = metadata.get(name);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

/**
 * 5xx answers a service gives on purpose about how this deployment is set up,
 * not about a failure: answered the same way every time, nothing for an
 * operator to look into per request, so not logged as errors.
 */
const SETTLED_ANSWERS = new Set<string>(["custom_domains_not_enabled"] satisfies ErrorCode[]);

/** The client went away before it was answered: nobody reads the answer, and it is no fault of ours. */
export function clientClosedRequest(): Problem {
  return new Problem("client_closed_request", "The client closed the connection before the request was answered.");
}

/** Any thrown value -> Problem; `internal` says whether to log it as a bug or outage. */
export function toProblem(err: unknown): { problem: Problem; internal: boolean } {
  if (err instanceof Problem) return { problem: err, internal: false };
  if (err instanceof ConnectError) {
    // The call was cancelled because the client went away (callOptions).
    if (err.code === Code.Canceled) return { problem: clientClosedRequest(), internal: false };
    return problemFromConnect(err);
  }
  // http-errors style errors (thrown by Koa or a library) carry `status`; only
  // client errors are shown, with a generic text.
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    const code: ErrorCode = status === 413 ? "payload_too_large" : status === 415 ? "unsupported_media_type" : "bad_request";
    return { problem: new Problem(code, ERROR_CODES[code].title), internal: false };
  }
  return { problem: internalProblem(), internal: true };
}
