import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openEmbeddedStore } from "../src/index.js";

// The embedded store writes documents as plain JSON without walking them for
// Dates until a Date was stored in the process (datafile.ts, serializeDoc).
// Its own file: Jest gives each test file fresh modules, so no Date was
// stored before this one's, and the first one must still be written as NeDB's
// `{"$$date":ms}`, in a document's insert and in an update of a document.

describe("the first Date stored in a process", () => {
  const root = mkdtempSync(path.join(tmpdir(), "first-date-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("is written as NeDB's $$date, inserted and set, and read back as a Date", async () => {
    const dir = path.join(root, "data");
    const store = await openEmbeddedStore({ dataDir: dir });
    const c = store.collection("things");
    await c.insertOne({ _id: "plain", n: 1 });
    await c.insertOne({ _id: "dated", at: new Date(5) });
    await c.updateOne({ _id: "plain" }, { $set: { seen: new Date(7) } });
    await store.close();
    // Closing compacted the file to its live documents, in `_id` order.
    const lines = readFileSync(path.join(dir, "things.db"), "utf8").trim().split("\n");
    expect(lines).toEqual(['{"_id":"dated","at":{"$$date":5}}', '{"_id":"plain","n":1,"seen":{"$$date":7}}']);
    const again = await openEmbeddedStore({ dataDir: dir });
    await expect(again.collection("things").find({}, { sort: { _id: 1 } })).resolves.toEqual([
      { _id: "dated", at: new Date(5) },
      { _id: "plain", n: 1, seen: new Date(7) },
    ]);
    await again.close();
  });
});
