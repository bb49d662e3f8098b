import { ensureKafka, type KafkaServer } from "./kafka.js";
import { ensureMongo, type MongoServer } from "./ferretdb.js";

export interface TestServers {
  mongo: MongoServer;
  kafka: KafkaServer;
  stop(): Promise<void>;
}

/**
 * Finds or starts both servers in parallel (the Kafka JVM and FerretDB start
 * independently). If one fails, the other is stopped before the error is
 * rethrown, so nothing is left running.
 */
export async function ensureServers(): Promise<TestServers> {
  const [mongo, kafka] = await Promise.allSettled([ensureMongo(), ensureKafka()]);
  if (mongo.status === "rejected" || kafka.status === "rejected") {
    await Promise.allSettled([
      mongo.status === "fulfilled" ? mongo.value.stop() : undefined,
      kafka.status === "fulfilled" ? kafka.value.stop() : undefined,
    ]);
    const errors = [mongo, kafka].flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
    if (errors.length === 1) throw errors[0];
    throw new AggregateError(errors, errors.map((e) => (e instanceof Error ? e.message : String(e))).join("\n\n"));
  }
  return {
    mongo: mongo.value,
    kafka: kafka.value,
    stop: async () => {
      await Promise.all([mongo.value.stop(), kafka.value.stop()]);
    },
  };
}
