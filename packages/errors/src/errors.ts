import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorDetailSchema, type ErrorDetail, type FieldViolation } from "@emailsvc/proto";
import { create } from "@bufbuild/protobuf";
import { MissingTenantError } from "@emailsvc/tenancy";
import type { Logger } from "@emailsvc/telemetry";

// Domain code throws AppError; the server interceptor turns it into a
// ConnectError carrying an emailsvc.common.v1.ErrorDetail, and the gateway turns
// that into problem+json. Anything else becomes a bare "internal" error: no
// internal message or stack ever leaves a service.

export type ErrorKind =
  | "invalid" // 400
  | "unauthenticated" // 401
  | "forbidden" // 403
  | "not_found" // 404
  | "conflict" // 409
  | "unprocessable" // 422: well-formed, but the account's state does not allow it (e.g. a From domain not verified)
  | "too_large" // 413
  | "rate_limited" // 429, with its Retry-After (and RateLimit headers) as metadata
  | "unavailable" // 503
  | "internal"; // 500

const KIND_TO_CODE: Record<ErrorKind, Code> = {
  invalid: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  forbidden: Code.PermissionDenied,
  not_found: Code.NotFound,
  conflict: Code.AlreadyExists,
  unprocessable: Code.FailedPrecondition,
  too_large: Code.ResourceExhausted,
  // The same gRPC code as too_large (a quota or budget of the caller's is
  // spent); the Retry-After it carries tells them apart.
  rate_limited: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  internal: Code.Internal,
};

export interface Violation {
  field: string;
  description: string;
}

export class AppError extends Error {
  constructor(
    readonly kind: ErrorKind,
    /** Stable machine code, e.g. "email_taken". */
    readonly code: string,
    message: string,
    readonly extra: {
      fieldViolations?: Violation[];
      existingId?: string;
      /** Response metadata the error carries to the caller (a refusal's Retry-After and RateLimit headers, lower case). */
      metadata?: Record<string, string>;
    } = {},
  ) {
    super(message);
    this.name = "AppError";
  }
}

export const invalid = (message: string, fieldViolations: Violation[] = []) =>
  new AppError("invalid", "validation_failed", message, { fieldViolations });

export const notFound = (what: string) => new AppError("not_found", "not_found", `${what} not found`);

/**
 * What a call failing with `err` answers: its gRPC code, message, detail and
 * metadata. A batch RPC carries these per item (delivery's SendEmails), as
 * the unary call's error would.
 */
export function errorParts(err: AppError): { code: Code; message: string; detail: ErrorDetail; metadata: Record<string, string> } {
  const detail = create(ErrorDetailSchema, {
    code: err.code,
    fieldViolations: (err.extra.fieldViolations ?? []).map((v) => ({ field: v.field, description: v.description })),
    existingId: err.extra.existingId ?? "",
  });
  return { code: KIND_TO_CODE[err.kind], message: err.message, detail, metadata: err.extra.metadata ?? {} };
}

/** The error a call answers for one item of a batch, from errorParts as the batch carried them (client side: readError reads it). */
export function errorFromParts(parts: { code: Code; message: string; detail: ErrorDetail | undefined; metadata: Record<string, string> }): ConnectError {
  const details = parts.detail ? [{ desc: ErrorDetailSchema, value: parts.detail }] : [];
  return new ConnectError(parts.message, parts.code, new Headers(parts.metadata), details);
}

export function toConnectError(err: unknown): ConnectError | undefined {
  if (err instanceof AppError) {
    const { code, message, detail } = errorParts(err);
    // Retry-After and RateLimit headers travel as response metadata (ErrorDetail has no field for them).
    const metadata = err.extra.metadata ? new Headers(err.extra.metadata) : undefined;
    return new ConnectError(message, code, metadata, [{ desc: ErrorDetailSchema, value: detail }]);
  }
  if (err instanceof MissingTenantError) {
    return new ConnectError("missing tenant", Code.Unauthenticated);
  }
  return undefined;
}

/**
 * Server interceptor: maps AppError to ConnectError with details, passes
 * ConnectErrors through, and hides everything else behind Code.Internal after
 * logging it (with the request id, without request data).
 */
export function errorInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      const mapped = toConnectError(err);
      if (mapped) throw mapped;
      if (err instanceof ConnectError) throw err;
      logger.error(
        { err: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err), rpc: req.method.name, request_id: req.header.get("x-request-id") },
        "unhandled error in rpc",
      );
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}

/** The metadata key of a rate_limited error's seconds to wait. */
const RETRY_AFTER = "retry-after";

export interface ErrorInfo {
  code: Code;
  /** Machine code from the service, or derived from the Connect code. */
  errorCode: string;
  message: string;
  fieldViolations: FieldViolation[];
  existingId: string;
  /** A rate_limited error's seconds to wait; undefined for any other. */
  retryAfterSeconds: number | undefined;
}

/** Reads what a service said about a failed call (client side). */
export function readError(err: unknown): ErrorInfo {
  const ce = ConnectError.from(err);
  const [detail] = ce.findDetails(ErrorDetailSchema);
  return {
    code: ce.code,
    errorCode: detail?.code || Code[ce.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase(),
    message: ce.rawMessage,
    fieldViolations: detail?.fieldViolations ?? [],
    existingId: detail?.existingId ?? "",
    retryAfterSeconds: retryAfterOf(ce),
  };
}

function retryAfterOf(ce: ConnectError): number | undefined {
  const raw = ce.metadata.get(RETRY_AFTER);
  if (raw === null || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}
