// Every event message, one namespace: `events.SubscriberCreatedSchema`, `events.EmailSendRequestedSchema`, ...
export * from "./gen/emailsvc/events/v1/subscriber_events_pb.js";
export * from "./gen/emailsvc/events/v1/email_events_pb.js";
export * from "./gen/emailsvc/events/v1/campaign_events_pb.js";
