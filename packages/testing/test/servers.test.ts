// Proves that the servers globalSetup found or started really work, through
// the same client libraries the services use.
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import { MongoClient, MongoServerError } from "mongodb";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: is the Jest globalSetup of @emailsvc/testing configured?`);
  return value;
}

// Hex only: FerretDB restricts database and collection names more than MongoDB does.
const unique = (): string => randomBytes(6).toString("hex");

describe("MongoDB-compatible server at MONGO_URL", () => {
  const dbName = `testing_${unique()}`;
  let client: MongoClient;

  beforeAll(async () => {
    client = new MongoClient(env("MONGO_URL"));
    await client.connect();
  });

  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  it("inserts and reads back a document", async () => {
    const things = client.db(dbName).collection<{ _id: string; name: string; tags: string[] }>("things");
    await things.insertOne({ _id: "a", name: "first", tags: ["x"] });

    expect(await things.findOne({ _id: "a" })).toEqual({ _id: "a", name: "first", tags: ["x"] });
  });

  it("enforces a unique index with duplicate key error 11000", async () => {
    const people = client.db(dbName).collection<{ email: string }>("people");
    await people.createIndex({ email: 1 }, { unique: true });
    await people.insertOne({ email: "ada@example.com" });

    const error = await people.insertOne({ email: "ada@example.com" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MongoServerError);
    expect((error as MongoServerError).code).toBe(11000);
    expect(await people.countDocuments({})).toBe(1);
  });
});

describe("Kafka at KAFKA_BROKERS", () => {
  const kafka = new Kafka({
    clientId: "emailsvc-testing-test",
    brokers: env("KAFKA_BROKERS").split(","),
    logLevel: logLevel.WARN,
  });

  it("produces and consumes one message", async () => {
    const topic = `testing-${unique()}`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const consumer = kafka.consumer({ groupId: `testing-${unique()}` });
    try {
      await producer.connect();
      await producer.send({ topic, messages: [{ key: "k", value: "hello" }] });

      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const received = await new Promise<{ key: string; value: string }>((resolve, reject) => {
        consumer
          .run({
            eachMessage: async ({ message }) =>
              resolve({ key: message.key?.toString() ?? "", value: message.value?.toString() ?? "" }),
          })
          .catch(reject);
      });
      expect(received).toEqual({ key: "k", value: "hello" });
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
  });
});
