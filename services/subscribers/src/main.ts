// The subscribers service alone (containers, Kubernetes); `npm start` runs it inside the embedded launcher.
import { runService } from "@emailsvc/service";
import { subscribersService } from "./service.js";

runService(subscribersService);
