import { envInt, type Env } from "@emailsvc/runtime";

/** The templates service's own settings (the common ones are the skeleton's). */
export interface TemplatesConfig {
  /** TEMPLATES_PURGE_AFTER_DAYS: how long a deleted template's versions stay for mail queued before the delete. */
  purgeAfterDays: number;
  /** TEMPLATES_COMPILE_WORKERS: worker threads compiling MJML; 0: cores - 1 (1 to 4). */
  compileWorkers: number;
}

export function loadConfig(env: Env = process.env): TemplatesConfig {
  return {
    purgeAfterDays: envInt("TEMPLATES_PURGE_AFTER_DAYS", 30, { min: 1, max: 3650 }, env),
    compileWorkers: envInt("TEMPLATES_COMPILE_WORKERS", 0, { min: 0, max: 64 }, env),
  };
}
