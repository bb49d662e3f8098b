import pino from "pino";
import { activeTraceIds } from "./tracing.js";

export type Logger = pino.Logger;

// Structured JSON logs, one line per event. Personal data never goes in: log ids,
// codes and counts, never emails, metadata, bodies or headers with secrets. The
// redaction below is a second line of defence for the usual suspects.
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    // The trace of the request or event being handled, on every line logged
    // inside it: one id finds a request's lines in every service.
    mixin: () => activeTraceIds() ?? {},
    redact: {
      paths: [
        "email",
        "*.email",
        "metadata",
        "*.metadata",
        "headers.authorization",
        "headers['x-api-key']",
        "req.headers.authorization",
        "req.headers['x-api-key']",
      ],
      censor: "[redacted]",
    },
  });
}
