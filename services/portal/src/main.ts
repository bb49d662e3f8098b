// The portal service alone (containers, Kubernetes); `npm start` runs it inside the embedded launcher.
import { runService } from "@emailsvc/service";
import { portalService } from "./service.js";

runService(portalService);
