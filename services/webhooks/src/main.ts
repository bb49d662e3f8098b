// The webhooks service alone (containers, Kubernetes); `npm start` runs it inside the embedded launcher.
import { runService } from "@emailsvc/service";
import { webhooksService } from "./service.js";

runService(webhooksService);
