export { startSubscribersService, type RunningSubscribersService, type SubscribersServiceOptions } from "./server.js";
export { SUBSCRIBER_TOPICS } from "./messaging/outbox.js";
export { subscribersService } from "./service.js";
