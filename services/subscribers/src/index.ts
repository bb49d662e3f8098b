export { startSubscribersService, type RunningSubscribersService, type SubscribersServiceOptions } from "./server.js";
export { subscribersService } from "./service.js";
// The subscribers' indexes and how an audience by tags is counted, for the benchmarks that read a store of them as the service does.
export { SUBSCRIBER_INDEXES } from "./storage/documents.js";
export { countLiveHolders } from "./usecases/audience.js";
