// The delivery service alone (containers, Kubernetes); `npm start` runs it inside the embedded launcher.
import { runService } from "@emailsvc/service";
import { deliveryService } from "./service.js";

runService(deliveryService);
