export { startSubscribersService, type RunningSubscribersService, type SubscribersServiceOptions } from "./server.js";
export { subscribersService } from "./service.js";
