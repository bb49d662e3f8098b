// @emailsvc/outbox: the in-document outbox (see outbox.ts and README.md).
export {
  Outbox,
  outboxWrites,
  type OutboxDoc,
  type OutboxEntry,
  type OutboxFields,
  type OutboxLogger,
  type OutboxOptions,
  type OutboxSettings,
  type OutboxWrites,
} from "./outbox.js";
export { Periodic } from "./periodic.js";
