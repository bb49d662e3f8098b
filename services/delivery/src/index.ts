export { startDeliveryService, type DeliveryServiceOptions, type RunningDeliveryService } from "./server.js";
export { loadConfig, type DeliveryConfig } from "./config.js";
export { DELIVERY_TOPICS, DELIVERY_PRODUCED_TOPICS, DELIVERY_CONSUMED_TOPICS } from "./messaging/outbox.js";
export { DELIVERY_GROUP } from "./messaging/send-consumer.js";
export type { Builtins, CompileRenderer, CompiledTemplate, RenderFn, Rendered } from "./domain/renderer.js";
export type { UnsubscribeUrlSource } from "./usecases/deliver-email.js";
export { parseSmtpUrl, type SmtpSettings, type SmtpTimeouts } from "./providers/smtp.js";
export { DEFAULT_FROM, parseSender, type Sender } from "./domain/message.js";
export { PUBLIC_ERRORS, type PublicErrorCode, type RetryPolicy } from "./domain/provider.js";
