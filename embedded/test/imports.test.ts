import { request } from "node:http";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { allItems, eventually, startTestPlatform, storedDocs, type TestPlatform } from "./support/platform-client";

// Bulk imports (issue 18) through the REST API of the real platform, on the
// embedded store and on MongoDB (FerretDB) with Kafka: CSV and NDJSON files
// with good rows, bad rows, duplicates, present, suppressed and erased
// addresses, in both modes; the report; an aborted upload; tenant isolation.

interface ImportJson {
  id: string;
  state: string;
  rows_read: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  failure: string | null;
}

describe.each(["embedded", "mongodb+kafka"] as const)("subscriber imports (%s)", (store) => {
  let t: TestPlatform;
  const real = store === "mongodb+kafka";

  beforeAll(async () => {
    t = await startTestPlatform(`imports-${real ? "real" : "embedded"}`, GENEROUS_RATE_LIMIT_ENV, { mongo: real, kafka: real });
  }, 60_000);
  afterAll(() => t?.close());

  async function upload(body: string, query: string, contentType = "text/csv", key?: string): Promise<ImportJson> {
    const res = await t.call("POST", `/api/v1/subscribers/imports${query}`, { raw: body, headers: { "content-type": contentType }, ...(key ? { key } : {}) });
    expect(res.status).toBe(202);
    expect(res.headers.get("location")).toBe(`/api/v1/subscribers/imports/${res.body.id}`);
    return res.body as ImportJson;
  }

  async function finished(id: string, key?: string): Promise<ImportJson> {
    const job = await eventually(
      async () => (await t.call("GET", `/api/v1/subscribers/imports/${id}`, key ? { key } : {})).body as ImportJson,
      (j) => j.state === "completed" || j.state === "failed",
      600,
    );
    expect(job.state).toBe("completed");
    return job;
  }

  async function report(id: string): Promise<string[]> {
    const res = await t.call("GET", `/api/v1/subscribers/imports/${id}/errors`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    return (res.text as string).trimEnd().split("\r\n");
  }

  const byEmail = async (email: string) => t.call("GET", `/api/v1/subscribers/by-email/${encodeURIComponent(email)}`);

  it("imports a CSV in create mode: good rows created once, bad ones and skipped ones in the report with their reasons, no values", async () => {
    // Present already, erased (suppression marker), and suppressed by hand.
    expect((await t.call("POST", "/api/v1/subscribers", { body: { email: "present@example.com", tags: ["old"], metadata: { plan: "gold" } } })).status).toBe(201);
    const erased = await t.call("POST", "/api/v1/subscribers", { body: { email: "erased@example.com" } });
    expect((await t.call("DELETE", `/api/v1/subscribers/${erased.body.id}`)).status).toBe(204);
    expect((await t.call("POST", "/api/v1/suppressions", { body: { email: "blocked@example.com", reason: "manual" } })).status).toBe(201);

    const tooManyTags = Array.from({ length: 101 }, (_, i) => `t${i}`).join(";");
    const csv = [
      "Email,Plan,Tags,Company",
      "ann@example.com,pro,news;vip,Acme",
      "not-an-address,pro,news,Acme",
      "bob@example.com,pro,news,\"Quote \"\"Inc\"\", Ltd\"",
      "ANN@example.com,free,news,Other",
      "present@example.com,free,new,Acme",
      "erased@example.com,free,news,Acme",
      "blocked@example.com,free,news,Acme",
      `carl@example.com,free,${tooManyTags},Acme`,
      `dora@example.com,${"x".repeat(501)},news,Acme`,
      "",
      "eve@example.com,,,",
    ].join("\r\n");
    const job = await upload(csv, "?email_column=Email&tags_column=Tags&metadata_columns=plan%3DPlan,Company");
    expect(job.state).toMatch(/^(queued|running|completed)$/);
    const done = await finished(job.id);
    expect(done).toMatchObject({ rows_read: 10, created: 3, updated: 0, skipped: 4, failed: 3, failure: null });

    const ann = await byEmail("ann@example.com");
    expect(ann.body).toMatchObject({ status: "active", tags: ["news", "vip"], metadata: { plan: "pro", Company: "Acme" } });
    expect((await byEmail("bob@example.com")).body.metadata).toEqual({ plan: "pro", Company: 'Quote "Inc", Ltd' });
    expect((await byEmail("eve@example.com")).body).toMatchObject({ metadata: {}, tags: [] });
    // Present: untouched in create mode.
    expect((await byEmail("present@example.com")).body).toMatchObject({ tags: ["old"], metadata: { plan: "gold" } });
    expect((await byEmail("erased@example.com")).status).toBe(404);
    expect((await byEmail("blocked@example.com")).status).toBe(404);

    const lines = await report(job.id);
    expect(lines[0]).toBe("row,field,code,detail");
    const codes = lines.slice(1).map((l) => l.split(",").slice(0, 3).join(","));
    expect(codes).toEqual([
      "2,email,invalid_email",
      "4,email,duplicate_in_file",
      "5,email,exists",
      "6,email,suppressed",
      "7,email,suppressed",
      "8,tags,too_many_tags",
      "9,metadata,invalid_metadata",
    ]);
    // The report names rules, never the row's values.
    expect(lines.join("\n")).not.toMatch(/example\.com|not-an-address|Acme|xxxx/);

    // Audited as an import, with the job's id; the event says it came from an import.
    const events = await t.call("GET", `/api/v1/subscribers/${ann.body.id}/events`);
    expect(events.body.items).toEqual([expect.objectContaining({ type: "subscriber.created", source: "import", data: expect.objectContaining({ import_id: job.id, row: 1 }) })]);
  });

  it("upserts: tags merged, metadata keys given replaced, status only from a mapped column; resubscribe lets suppressed and erased addresses in", async () => {
    expect((await t.call("POST", "/api/v1/subscribers", { body: { email: "up1@example.com", tags: ["a"], metadata: { keep: "yes", plan: "free" } } })).status).toBe(201);
    expect((await t.call("POST", "/api/v1/subscribers", { body: { email: "up2@example.com", status: "unsubscribed" } })).status).toBe(201);
    const erased = await t.call("POST", "/api/v1/subscribers", { body: { email: "back@example.com" } });
    expect((await t.call("DELETE", `/api/v1/subscribers/${erased.body.id}`)).status).toBe(204);

    const ndjson = [
      JSON.stringify({ email: "up1@example.com", tags: ["b"], metadata: { plan: "pro" } }),
      JSON.stringify({ email: "up2@example.com", tags: ["b"] }),
      JSON.stringify({ email: "back@example.com", tags: ["b"] }),
      "{not json",
      JSON.stringify({ email: "new1@example.com", metadata: { nested: { no: 1 } } }),
      JSON.stringify({ email: "new2@example.com", status: "sleeping" }),
      JSON.stringify({ email: "new3@example.com", locale: "de", extra: 1 }),
      JSON.stringify({ email: "new4@example.com", locale: "de", status: "unsubscribed" }),
    ].join("\n");
    // resubscribe needs its reason.
    const refused = await t.call("POST", "/api/v1/subscribers/imports?mode=upsert&resubscribe=true", { raw: ndjson, headers: { "content-type": "application/x-ndjson" } });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe("validation_failed");

    const job = await upload(ndjson, "?mode=upsert&resubscribe=true&resubscribe_reason=opted%20in%20on%20our%20old%20list", "application/x-ndjson");
    const done = await finished(job.id);
    expect(done).toMatchObject({ rows_read: 8, created: 2, updated: 2, skipped: 0, failed: 4 });
    expect((await byEmail("up1@example.com")).body).toMatchObject({ tags: ["a", "b"], metadata: { keep: "yes", plan: "pro" }, status: "active" });
    // No status in the row: the present one keeps its own.
    expect((await byEmail("up2@example.com")).body).toMatchObject({ tags: ["b"], status: "unsubscribed" });
    expect((await byEmail("new4@example.com")).body).toMatchObject({ locale: "de", status: "unsubscribed" });
    const back = await byEmail("back@example.com");
    expect(back.status).toBe(200);
    const audit = await t.call("GET", `/api/v1/subscribers/${back.body.id}/events`);
    expect(audit.body.items[0]).toMatchObject({ source: "import", data: { resubscribe: true, resubscribe_reason: "opted in on our old list", import_id: job.id } });
    const codes = (await report(job.id)).slice(1).map((l) => l.split(",").slice(0, 3).join(","));
    expect(codes).toEqual(["4,row,invalid_json", "5,metadata,invalid_metadata", "6,status,invalid_status", "7,row,unknown_field"]);
  });

  it("refuses what is wrong before storing anything: content type, options, an empty body", async () => {
    const wrongType = await t.call("POST", "/api/v1/subscribers/imports", { raw: "email\na@example.com\n", headers: { "content-type": "application/json" } });
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.code).toBe("unsupported_media_type");
    const badMode = await t.call("POST", "/api/v1/subscribers/imports?mode=replace", { raw: "email\n", headers: { "content-type": "text/csv" } });
    expect(badMode.status).toBe(400);
    const badKey = await t.call("POST", "/api/v1/subscribers/imports?metadata_columns=a.b", { raw: "email,a.b\nx@example.com,1\n", headers: { "content-type": "text/csv" } });
    expect(badKey.status).toBe(400);
    expect(badKey.body.errors.map((e: { field: string }) => e.field)).toEqual(["columns.metadata.a.b"]);
    const before = (await allItems<ImportJson>((p) => t.call("GET", p), "/api/v1/subscribers/imports")).length;
    const empty = await t.call("POST", "/api/v1/subscribers/imports", { raw: "", headers: { "content-type": "text/csv" } });
    expect(empty.status).toBe(400);
    expect(empty.body.code).toBe("import_empty");
    // The empty upload left a failed job, not one waiting.
    const jobs = await allItems<ImportJson>((p) => t.call("GET", p), "/api/v1/subscribers/imports");
    expect(jobs.length).toBe(before + 1);
    expect(jobs[0]).toMatchObject({ state: "failed", failure: "upload_aborted" });
    // A mapped column the header lacks fails the job, saying which way.
    const missing = await upload("mail\na@example.com\n", "");
    const failed = await eventually(async () => (await t.call("GET", `/api/v1/subscribers/imports/${missing.id}`)).body as ImportJson, (j) => j.state === "failed", 600);
    expect(failed.failure).toBe("missing_columns");
  });

  it("an upload cut off mid-body leaves no job waiting, and stores no row", async () => {
    const before = await allItems<ImportJson>((p) => t.call("GET", p), "/api/v1/subscribers/imports");
    const url = new URL(t.url);
    await new Promise<void>((resolve) => {
      const req = request({
        host: url.hostname,
        port: url.port,
        method: "POST",
        path: "/api/v1/subscribers/imports",
        headers: { "x-api-key": t.key, "content-type": "text/csv", "content-length": String(10 * 1024 * 1024) },
      });
      req.on("error", () => resolve());
      req.on("close", () => resolve());
      // 3 MiB of 10 announced (several chunks stored), then the connection goes.
      const rows = Array.from({ length: 120_000 }, (_, i) => `cut${i}@example.com`).join("\n");
      req.write(`email\n${rows}`.slice(0, 3 * 1024 * 1024), () => setTimeout(() => req.destroy(), 200));
    });
    const jobs = await eventually(
      () => allItems<ImportJson>((p) => t.call("GET", p), "/api/v1/subscribers/imports"),
      (items) => items.length === before.length + 1 && items[0]!.state === "failed",
      600,
    );
    expect(jobs[0]).toMatchObject({ state: "failed", failure: "upload_aborted", rows_read: 0 });
    expect((await byEmail("cut1@example.com")).status).toBe(404);
    // Its chunks are gone, also the one a chunk call still in flight when the client went stores after the abort
    // (that call finds the job failed and drops what it stored: it may end a moment after the job reads failed).
    if (real) {
      const left = await eventually(
        async () => (await storedDocs(t, "subscribers", "import_chunks")).filter((c) => c.job_id === jobs[0]!.id),
        (chunks) => chunks.length === 0,
        200,
      );
      expect(left).toEqual([]);
    }
  });

  it("fires subscriber.created triggers for imported subscribers only when the import asks (run_triggers)", async () => {
    const template = await t.call("POST", "/api/v1/templates", {
      body: { name: "Welcome", subject: "Welcome", category: "transactional", mjml_content: "<mjml><mj-body><mj-section><mj-column><mj-text>Hi</mj-text></mj-column></mj-section></mj-body></mjml>" },
    });
    expect(template.status).toBe(201);
    const trigger = await t.call("POST", "/api/v1/triggers", { body: { event_type: "subscriber.created", template_id: template.body.id } });
    expect(trigger.status).toBe(201);
    const fires = async (email: string) => {
      const id = (await byEmail(email)).body.id as string;
      const read = async () =>
        ((await t.call("GET", `/api/v1/subscribers/${id}/export`)).body.trigger_sends as Array<{ trigger_id: string; state: string; reason: string | null }>)
          .filter((f) => f.trigger_id === trigger.body.id)
          .map(({ state, reason }) => ({ state, reason }));
      return eventually(read, (list) => list.length > 0 && list.every((f) => f.state !== "pending"), 600);
    };
    await finished((await upload("email\nquiet@example.com\n", "")).id);
    await finished((await upload("email\nwelcomed@example.com\n", "?run_triggers=true")).id);
    // Each event's fire is recorded and decided: skipped for the plain import, sent for the one that asked.
    expect(await fires("quiet@example.com")).toEqual([{ state: "skipped", reason: "imported" }]);
    expect(await fires("welcomed@example.com")).toEqual([{ state: "sent", reason: null }]);
    const mail = await t.call("GET", "/api/v1/emails?limit=500");
    expect(mail.body.items.map((e: { to: string }) => e.to).filter((to: string) => ["quiet@example.com", "welcomed@example.com"].includes(to))).toEqual(["welcomed@example.com"]);
    expect((await t.call("DELETE", `/api/v1/triggers/${trigger.body.id}`)).status).toBe(204);
  });

  it("keeps each tenant's imports to itself: another account's key and the live key of the same account see none of them", async () => {
    const job = await upload("email\niso@example.com\n", "");
    await finished(job.id);
    const live = await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } });
    const other = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "other" } });
    const otherKey = await t.call("POST", `/admin/v1/accounts/${other.body.id}/api-keys`, { admin: true, body: { mode: "test" } });
    for (const key of [live.body.key as string, otherKey.body.key as string]) {
      expect((await t.call("GET", `/api/v1/subscribers/imports/${job.id}`, { key })).status).toBe(404);
      expect((await t.call("GET", `/api/v1/subscribers/imports/${job.id}/errors`, { key })).status).toBe(404);
      expect((await t.call("GET", "/api/v1/subscribers/imports", { key })).body.items).toEqual([]);
      expect((await t.call("GET", "/api/v1/subscribers/by-email/iso%40example.com", { key })).status).toBe(404);
    }
    // The live key's own import lands in live mode only.
    const liveJob = await upload("email\niso@example.com\n", "", "text/csv", live.body.key);
    expect(await finished(liveJob.id, live.body.key)).toMatchObject({ created: 1 });
    expect((await t.call("GET", "/api/v1/subscribers/imports", { key: null })).status).toBe(401);
  });
});
