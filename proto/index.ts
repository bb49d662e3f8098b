// One import point for the generated contracts. Regenerate with `npm run generate`.
export * from "./gen/emailsvc/subscribers/v1/subscribers_pb.js";
export * from "./gen/emailsvc/subscribers/v1/tags_pb.js";
export * from "./gen/emailsvc/subscribers/v1/audience_pb.js";
export * from "./gen/emailsvc/subscribers/v1/suppressions_pb.js";
export * as imports from "./gen/emailsvc/subscribers/v1/imports_pb.js";
export * as events from "./events.js";
export * as health from "./gen/grpc/health/v1/health_pb.js";
export * from "./gen/emailsvc/common/v1/errors_pb.js";
export * from "./gen/emailsvc/common/v1/audit_pb.js";
export * as templates from "./gen/emailsvc/templates/v1/templates_pb.js";
export * as delivery from "./delivery.js";
export * as campaigns from "./gen/emailsvc/campaigns/v1/campaigns_pb.js";
export * as triggers from "./gen/emailsvc/campaigns/v1/triggers_pb.js";
export * as portal from "./portal.js";
export * as webhooks from "./gen/emailsvc/webhooks/v1/webhooks_pb.js";
// Vocabularies the contracts carry as strings, with one owner each.
export * from "./trigger-event-types.js";
export * from "./webhook-event-types.js";
// The parts of a subscriber's data export (each service's ExportSubscriberData), typed once.
export * from "./export-parts.js";
