// One import point for the generated contracts. Regenerate with `npm run generate`.
export * from "./gen/emailsvc/subscribers/v1/subscribers_pb.js";
export * from "./gen/emailsvc/subscribers/v1/tags_pb.js";
export * as events from "./gen/emailsvc/events/v1/subscriber_events_pb.js";
export * as health from "./gen/grpc/health/v1/health_pb.js";
export * from "./gen/emailsvc/common/v1/errors_pb.js";
