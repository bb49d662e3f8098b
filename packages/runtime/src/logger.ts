import pino from "pino";

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
