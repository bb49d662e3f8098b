import { envInt, envOptional, envString } from "@emailsvc/runtime";

export interface TemplatesConfig {
  grpcHost: string;
  grpcPort: number;
  mongoUrl: string | undefined;
  mongoDb: string;
  dataDir: string;
  purgeAfterDays: number;
  /** Worker threads compiling MJML; 0: cores - 1 (1 to 4). */
  compileWorkers: number;
}

export function loadConfig(): TemplatesConfig {
  return {
    grpcHost: envString("GRPC_HOST", "127.0.0.1"),
    grpcPort: envInt("GRPC_PORT", 50052, { min: 0, max: 65535 }),
    mongoUrl: envOptional("MONGO_URL"),
    mongoDb: envString("MONGO_DB", "templates"),
    dataDir: envString("DATA_DIR", "./data"),
    purgeAfterDays: envInt("TEMPLATES_PURGE_AFTER_DAYS", 30, { min: 1, max: 3650 }),
    compileWorkers: envInt("TEMPLATES_COMPILE_WORKERS", 0, { min: 0, max: 64 }),
  };
}
