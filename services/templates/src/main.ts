// The templates service alone (containers, Kubernetes); `npm start` runs it inside the embedded launcher.
import { runService } from "@emailsvc/service";
import { templatesService } from "./service.js";

runService(templatesService);
