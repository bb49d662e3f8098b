// The MongoDB-protocol server the per-service benchmarks run on: what it is, the services' environment on it, and dropping a run's databases.
import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";

/** The MongoDB-protocol server by what it says of itself (FerretDB names its own version beside the MongoDB one it speaks). */
export async function describeMongo(url: string, fallback: string): Promise<string> {
  const client = await MongoClient.connect(url);
  try {
    const info = (await client.db("admin").command({ buildInfo: 1 })) as { version?: string; ferretdbVersion?: string };
    if (info.ferretdbVersion) return `FerretDB ${info.ferretdbVersion}`;
    return info.version ? `MongoDB ${info.version}` : fallback;
  } catch {
    return fallback;
  } finally {
    await client.close();
  }
}

/** Drops a run's databases (the server may be a shared one). */
export async function dropDatabases(url: string, names: string[]): Promise<void> {
  const client = await MongoClient.connect(url);
  try {
    for (const name of names) await client.db(name).dropDatabase();
  } finally {
    await client.close();
  }
}

/**
 * The environment of every service process on MongoDB with Kafka: the
 * servers, a fresh KAFKA_NAMESPACE, and keys shared by every service and
 * replica (on MongoDB no service keeps development keys).
 */
export function perServiceMongoEnv(mongoUrl: string, kafkaBrokers: string, prefix: string): Record<string, string> {
  const keys = () => `k1:${randomBytes(32).toString("base64")}`;
  return {
    MONGO_URL: mongoUrl,
    KAFKA_BROKERS: kafkaBrokers,
    KAFKA_NAMESPACE: prefix,
    TOKEN_SIGNING_KEYS: keys(),
    SUPPRESSION_KEYS: keys(),
    SEALING_KEYS: keys(),
  };
}
