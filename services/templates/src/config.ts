import { envInt, loadServiceEnv, type ServiceEnv } from "@emailsvc/runtime";

export interface TemplatesConfig extends ServiceEnv {
  purgeAfterDays: number;
  /** Worker threads compiling MJML; 0: cores - 1 (1 to 4). */
  compileWorkers: number;
}

export function loadConfig(): TemplatesConfig {
  return {
    ...loadServiceEnv("templates", 50052),
    purgeAfterDays: envInt("TEMPLATES_PURGE_AFTER_DAYS", 30, { min: 1, max: 3650 }),
    compileWorkers: envInt("TEMPLATES_COMPILE_WORKERS", 0, { min: 0, max: 64 }),
  };
}
