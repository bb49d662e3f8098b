import { info, seconds } from "./log.js";
import { ensureServers } from "./servers.js";

/**
 * Where globalSetup leaves the stop function for globalTeardown. Jest runs
 * both in its main process and shares `globalThis` between them (but not
 * module instances, which it may load separately), hence a global symbol.
 */
export const STOP_KEY = Symbol.for("@emailsvc/testing/stop");

/**
 * Jest globalSetup: finds or starts MongoDB-compatible and Kafka servers once
 * per run and exports their addresses through the environment, which Jest's
 * test workers inherit.
 */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const servers = await ensureServers();
  process.env.MONGO_URL = servers.mongo.url;
  process.env.KAFKA_BROKERS = servers.kafka.brokers;
  (globalThis as Record<symbol, unknown>)[STOP_KEY] = servers.stop;
  info(
    `servers ready in ${seconds(Date.now() - started)}: MONGO_URL=${servers.mongo.url} (${servers.mongo.source}) ` +
      `KAFKA_BROKERS=${servers.kafka.brokers} (${servers.kafka.source})`,
  );
}
