import { loadServiceEnv, type ServiceEnv } from "@emailsvc/runtime";

export type SubscribersConfig = ServiceEnv;

export function loadConfig(): SubscribersConfig {
  return loadServiceEnv("subscribers", 50051);
}
