export { startCampaignsService, type CampaignsServiceOptions, type RunningCampaignsService } from "./server.js";
export { campaignsService } from "./service.js";
