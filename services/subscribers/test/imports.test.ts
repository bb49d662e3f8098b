import { createClient } from "@connectrpc/connect";
import { fromBinary } from "@bufbuild/protobuf";
import { createServiceTransport } from "@emailsvc/grpc";
import { events, imports } from "@emailsvc/proto";
import { createLogger } from "@emailsvc/telemetry";
import { tenantKey } from "@emailsvc/tenancy";
import { startSubscribersService, type RunningSubscribersService } from "../src/server.js";
import { SubscriberStorage } from "../src/storage/repositories.js";
import { DocumentSpool, type ImportSpool } from "../src/storage/import-spool.js";
import { appendImportChunk } from "../src/usecases/append-import-chunk.js";
import type { Scope } from "../src/usecases/deps.js";
import type { ImportDeps } from "../src/usecases/import-deps.js";
import { as, startHarness, SUPPRESSION_KEYS, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// ImportService over real gRPC with several replicas on one store and bus:
// each job is run by one worker at a time (a lease), the jobs of one upload
// burst are shared out, and every row is created and published exactly once.

describe.each<StoreKind>(["embedded", "mongodb"])("imports with several replicas (%s)", (kind) => {
  let h: Harness;
  const replicas: RunningSubscribersService[] = [];

  beforeAll(async () => {
    h = await startHarness(kind);
    for (let i = 0; i < 2; i++) {
      replicas.push(
        await startSubscribersService({
          store: h.store,
          bus: h.bus,
          logger: createLogger("subscribers", "silent"),
          port: 0,
          suppressionKeys: SUPPRESSION_KEYS,
          sweepIntervalMs: 50,
          sweepGraceMs: 100,
          imports: { batchRows: 50, pollMs: 20, leaseMs: 5000, uploadSweepMs: 50 },
        }),
      );
    }
  }, 60_000);
  afterAll(async () => {
    for (const replica of replicas) await replica.close();
    await h?.close();
  });

  it("runs each of several jobs once, each row created and published exactly once", async () => {
    const client = createClient(imports.ImportService, createServiceTransport(replicas[0]!.url));
    const t = tenant();
    const options = as(t);
    const jobs: string[] = [];
    for (let j = 0; j < 3; j++) {
      const rows = Array.from({ length: 300 }, (_, i) => `j${j}r${i}@example.com`);
      const created = await client.createImport({ format: imports.ImportFormat.CSV, mode: imports.ImportMode.CREATE, columns: { email: "email" } }, options);
      const id = created.job!.id;
      const text = Buffer.from(`email\n${rows.join("\n")}\n`);
      // Two chunks, the first sent twice (a retried call): stored once.
      const half = Math.floor(text.length / 2);
      await client.appendImportChunk({ jobId: id, seq: 0n, data: text.subarray(0, half) }, options);
      await client.appendImportChunk({ jobId: id, seq: 0n, data: text.subarray(0, half) }, options);
      await client.appendImportChunk({ jobId: id, seq: 1n, data: text.subarray(half) }, options);
      expect((await client.startImport({ jobId: id, chunkCount: 2n }, options)).job!.state).toBe(imports.ImportState.QUEUED);
      jobs.push(id);
    }
    for (const id of jobs) {
      const job = await waitFor(async () => {
        const read = (await client.getImport({ id }, options)).job!;
        return read.state === imports.ImportState.COMPLETED ? read : undefined;
      }, "the import to complete", 30_000);
      expect(job.counts).toMatchObject({ rowsRead: 300n, created: 300n, skipped: 0n, failed: 0n });
      expect(job.sizeBytes).toBe(BigInt(Buffer.byteLength(`email\n${Array.from({ length: 300 }, (_, i) => `j${jobs.indexOf(id)}r${i}@example.com`).join("\n")}\n`)));
    }
    const created = () =>
      h.received.filter((e) => e.topic === "subscriber.created").map((e) => fromBinary(events.SubscriberCreatedSchema, e.value)).filter((e) => jobs.includes(e.importId));
    await waitFor(async () => (created().length >= 900 ? true : undefined), "the events", 30_000);
    const list = created();
    expect(list).toHaveLength(900);
    expect(new Set(list.map((e) => e.subscriberId)).size).toBe(900);
    expect(list.every((e) => !e.importRunsTriggers)).toBe(true);
    // Another tenant sees none of them.
    await expect(client.getImport({ id: jobs[0]! }, as(tenant()))).rejects.toThrow(/not found/);
    expect((await client.listImports({ limit: 10 }, as(tenant()))).jobs).toEqual([]);
  });

  it("refuses chunks once a job is started, and a start with chunks missing", async () => {
    const client = createClient(imports.ImportService, createServiceTransport(replicas[1]!.url));
    const options = as(tenant());
    const id = (await client.createImport({ format: imports.ImportFormat.NDJSON, mode: imports.ImportMode.UPSERT }, options)).job!.id;
    await client.appendImportChunk({ jobId: id, seq: 1n, data: Buffer.from('{"email":"a@example.com"}\n') }, options);
    await expect(client.startImport({ jobId: id, chunkCount: 2n }, options)).rejects.toThrow(/missing/);
    await client.appendImportChunk({ jobId: id, seq: 0n, data: Buffer.from('{"email":"b@example.com"}\n') }, options);
    await client.startImport({ jobId: id, chunkCount: 2n }, options);
    await expect(client.appendImportChunk({ jobId: id, seq: 2n, data: Buffer.from("x") }, options)).rejects.toThrow(/takes no more chunks/);
    const done = await waitFor(async () => {
      const read = (await client.getImport({ id }, options)).job!;
      return read.state === imports.ImportState.COMPLETED ? read : undefined;
    }, "the import to complete", 30_000);
    expect(done.counts).toMatchObject({ rowsRead: 2n, created: 2n });
  });

  it("leaves no chunk behind when the upload is aborted while a chunk is being stored (the client went with that call in flight)", async () => {
    const client = createClient(imports.ImportService, createServiceTransport(replicas[0]!.url));
    const call = tenant();
    const id = (await client.createImport({ format: imports.ImportFormat.CSV, mode: imports.ImportMode.CREATE, columns: { email: "email" } }, as(call))).job!.id;
    // The chunk's write is held until the abort has failed the job and dropped its chunks, as a slow write and a
    // quick abort meet when the gateway's client hangs up.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const storing = new Promise<void>((resolve) => (entered = resolve));
    const inner = new DocumentSpool();
    const spool: ImportSpool = {
      put: async (...args) => {
        entered();
        await held;
        return inner.put(...args);
      },
      get: (...args) => inner.get(...args),
      missing: (...args) => inner.missing(...args),
      drop: (...args) => inner.drop(...args),
    };
    const scope = { call, ...new SubscriberStorage(h.store).forTenant(tenantKey(call.tenant)) } as unknown as Scope;
    const appended = appendImportChunk({ spool, now: Date.now } as unknown as ImportDeps, scope, { jobId: id, seq: 0, data: Buffer.from("email\na@example.com\n") });
    await storing;
    await client.abortImport({ jobId: id }, as(call));
    release();
    await expect(appended).rejects.toMatchObject({ code: "import_not_uploading" });
    expect((await client.getImport({ id }, as(call))).job).toMatchObject({ state: imports.ImportState.FAILED, failure: "upload_aborted" });
    expect(await scope.importChunks.find({ job_id: id })).toEqual([]);
  });

  it("redoes a job whose writes outlived its checkpoint (a crash between them): each row counted once, its tags named, no second subscriber, the same events", async () => {
    const client = createClient(imports.ImportService, createServiceTransport(replicas[0]!.url));
    const t = tenant();
    const options = as(t);
    const key = tenantKey(t.tenant);
    const rows = Array.from({ length: 120 }, (_, i) => `redo${i}@example.com,t${i % 3}`);
    const id = (await client.createImport({ format: imports.ImportFormat.CSV, mode: imports.ImportMode.CREATE, columns: { email: "email", tags: "tags" } }, options)).job!.id;
    await client.appendImportChunk({ jobId: id, seq: 0n, data: Buffer.from(`email,tags\n${rows.join("\n")}\n`) }, options);
    // The upload as stored (these replicas keep chunks as documents), to put back for the second run.
    const chunks = await h.store.collection("import_chunks").find({ tenant: key });
    expect(chunks.length).toBeGreaterThan(0);
    await client.startImport({ jobId: id, chunkCount: 1n }, options);
    const completed = async () =>
      waitFor(async () => {
        const read = (await client.getImport({ id }, options)).job!;
        return read.state === imports.ImportState.COMPLETED ? read : undefined;
      }, "the import to complete", 30_000);
    expect((await completed()).counts).toMatchObject({ rowsRead: 120n, created: 120n, skipped: 0n, failed: 0n });
    const createdEvents = () =>
      h.received.filter((e) => e.topic === "subscriber.created").map((e) => fromBinary(events.SubscriberCreatedSchema, e.value)).filter((e) => e.importId === id);
    await waitFor(async () => (createdEvents().length >= 120 ? true : undefined), "the events", 30_000);
    const firstEventIds = new Set(createdEvents().map((e) => e.meta!.eventId));

    // The worker drops the upload after it marks the job completed: put it back only once it is gone, or that drop takes the copy too.
    await waitFor(async () => ((await h.store.collection("import_chunks").find({ tenant: key, job_id: id })).length === 0 ? true : undefined), "the upload dropped", 30_000);
    // As after a crash that lost the checkpoint: every row written, the job back at row 0.
    await h.store.collection("import_chunks").insertMany(chunks);
    await h.store.collection("imports").updateOne(
      { _id: id, tenant: key },
      { $set: { state: "queued", row: 0, counts: { rows_read: 0, created: 0, updated: 0, skipped: 0, failed: 0 }, lease_owner: "", lease_until: 0 } },
    );
    expect((await completed()).counts).toMatchObject({ rowsRead: 120n, created: 120n, skipped: 0n, failed: 0n });
    const subscribers = await h.store.collection("subscribers").find({ tenant: key });
    expect(subscribers).toHaveLength(120);
    await waitFor(async () => (createdEvents().length >= 240 ? true : undefined), "the events carried out again", 30_000);
    // Carried out again with the same ids (consumers drop repeats), each naming its row's tag.
    const again = createdEvents();
    expect(new Set(again.map((e) => e.meta!.eventId))).toEqual(firstEventIds);
    expect(new Set(again.map((e) => e.subscriberId)).size).toBe(120);
  });

  it("drops an upload its job's worker kept by dying between the job's end and the drop: no personal data stays past the job", async () => {
    const client = createClient(imports.ImportService, createServiceTransport(replicas[0]!.url));
    const t = tenant();
    const options = as(t);
    const key = tenantKey(t.tenant);
    const id = (await client.createImport({ format: imports.ImportFormat.CSV, mode: imports.ImportMode.CREATE, columns: { email: "email" } }, options)).job!.id;
    await client.appendImportChunk({ jobId: id, seq: 0n, data: Buffer.from("email\nkept@example.com\n") }, options);
    const chunks = await h.store.collection("import_chunks").find({ tenant: key, job_id: id });
    expect(chunks).toHaveLength(1);
    expect(await h.store.collection("imports").findOne({ _id: id, tenant: key })).toMatchObject({ upload_held: true });
    await client.startImport({ jobId: id, chunkCount: 1n }, options);
    const chunksLeft = async () => (await h.store.collection("import_chunks").find({ tenant: key, job_id: id })).length;
    await waitFor(async () => ((await h.store.collection("imports").findOne({ _id: id, tenant: key }))?.upload_held === false ? true : undefined), "the upload noted dropped", 30_000);
    expect(await chunksLeft()).toBe(0);
    expect((await client.getImport({ id }, options)).job!.state).toBe(imports.ImportState.COMPLETED);

    // As after a crash between the two writes: the job completed, its upload still stored.
    await h.store.collection("import_chunks").insertMany(chunks);
    await h.store.collection("imports").updateOne({ _id: id, tenant: key }, { $set: { upload_held: true } });
    await waitFor(async () => ((await chunksLeft()) === 0 ? true : undefined), "the sweep to drop the upload", 30_000);
    await waitFor(async () => ((await h.store.collection("imports").findOne({ _id: id, tenant: key }))?.upload_held === false ? true : undefined), "the sweep to note it", 30_000);
    // The job itself is as it was.
    expect((await client.getImport({ id }, options)).job).toMatchObject({ state: imports.ImportState.COMPLETED, counts: { rowsRead: 1n, created: 1n } });
  });
});
