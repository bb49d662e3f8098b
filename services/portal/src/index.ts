export { startPortalService, type PortalServiceOptions, type RunningPortalService } from "./server.js";
export { portalService } from "./service.js";
