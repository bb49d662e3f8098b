export { startWebhooksService, type RunningWebhooksService, type WebhooksServiceOptions } from "./server.js";
export { webhooksService } from "./service.js";
