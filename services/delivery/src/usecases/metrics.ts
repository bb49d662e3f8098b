import { counter, histogram } from "@emailsvc/telemetry";

// Delivery's own metrics (the runtime kit adds gRPC, events and process
// metrics). Labels are statuses, providers and outcomes: no tenant, no email.

/** Emails entering each status: queued by SendEmail, then deferred, sent, bounced, failed or suppressed. */
export const emailsByStatus = counter("delivery_emails_total", "Emails that reached a status (queued, deferred, sent, bounced, failed, suppressed).", ["status"]);

/** Time of one hand-off to the provider (SMTP: connect or reuse, MAIL, RCPT, DATA, the reply). */
export const handoffDuration = histogram("delivery_handoff_duration_seconds", "Time of one hand-off to the provider, by outcome.", [
  "provider",
  "outcome",
]);
