// The campaigns service alone (containers, Kubernetes); `npm start` runs it inside the embedded launcher.
import { runService } from "@emailsvc/service";
import { campaignsService } from "./service.js";

runService(campaignsService);
