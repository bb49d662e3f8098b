import { envInt, envOptional, envString } from "@emailsvc/runtime";

export interface SubscribersConfig {
  grpcHost: string;
  grpcPort: number;
  mongoUrl: string | undefined;
  mongoDb: string;
  dataDir: string;
  kafkaBrokers: string | undefined;
}

export function loadConfig(): SubscribersConfig {
  return {
    grpcHost: envString("GRPC_HOST", "127.0.0.1"),
    grpcPort: envInt("GRPC_PORT", 50051, { min: 0, max: 65535 }),
    mongoUrl: envOptional("MONGO_URL"),
    mongoDb: envString("MONGO_DB", "subscribers"),
    dataDir: envString("DATA_DIR", "./data"),
    kafkaBrokers: envOptional("KAFKA_BROKERS"),
  };
}
