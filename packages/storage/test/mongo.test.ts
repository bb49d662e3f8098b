// The MongoDB adapter against the shared contract, on the server in MONGO_URL
// (the Jest globalSetup of packages/testing starts FerretDB v1 when none is
// given). Without a server this file fails, never skips: CI must not go green
// without having run it.

import { MongoClient } from "mongodb";
import { openMongoStore, openStore, redactUrl } from "../src/index.js";
import { describeDocumentStoreContract } from "./contract.js";

const url = process.env.MONGO_URL;
// One database per run, dropped at the end, so runs never see each other's data.
const dbName = `storage_contract_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;

if (url === undefined || url === "") {
  test("MONGO_URL is set", () => {
    throw new Error(
      `MONGO_URL is not set${process.env.CI ? " (CI)" : ""}: run through the repository's Jest config, whose ` +
        "globalSetup starts FerretDB, or point MONGO_URL at a MongoDB-compatible server",
    );
  });
} else {
  afterAll(async () => {
    const client = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
    try {
      await client.db(dbName).dropDatabase();
    } finally {
      await client.close();
    }
  });

  describeDocumentStoreContract(`mongo (${redactUrl(url)})`, () => openMongoStore({ url, dbName }));

  test("openStore picks MongoDB when mongoUrl is set", async () => {
    const store = await openStore({ mongoUrl: url, dataDir: "/nonexistent", dbName });
    await expect(store.ping()).resolves.toBe(true);
    await store.close();
  });
}

describe("mongo connection", () => {
  test("a missing server fails fast, with the URL (password hidden) in the message", async () => {
    const started = Date.now();
    await expect(
      openMongoStore({
        url: "mongodb://app:secret@127.0.0.1:9/?directConnection=true",
        dbName: "x",
        serverSelectionTimeoutMS: 300,
      }),
    ).rejects.toThrow(/cannot reach MongoDB at mongodb:\/\/app:\*\*\*@127\.0\.0\.1:9\/.* within 300 ms/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test("redactUrl hides passwords only", () => {
    expect(redactUrl("mongodb://u:p@h:1/db")).toBe("mongodb://u:***@h:1/db");
    expect(redactUrl("mongodb+srv://u:p%40ss@cluster/db")).toBe("mongodb+srv://u:***@cluster/db");
    expect(redactUrl("mongodb://h:27017/db")).toBe("mongodb://h:27017/db");
  });
});
