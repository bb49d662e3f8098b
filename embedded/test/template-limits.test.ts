import { openMongoStore } from "@emailsvc/storage";
import { TEMPLATE_LIMITS, templateAtLimits } from "@emailsvc/render";
import { registry } from "@emailsvc/telemetry";
import { eventually, startTestPlatform, type TestPlatform } from "./support/platform-client";

// Issue 6, defect 1, through the REST API of the whole platform (gateway,
// templates and delivery over gRPC, one process as `npm start` runs it): a
// template nesting `{{#if x}}` 3,000 deep (48 KB) was accepted, and every
// preview or send of it then overflowed the stack on the main thread, freezing
// every tenant for seconds per message.

const wrap = (inner: string) => `<mjml><mj-body><mj-section><mj-column><mj-text>${inner}</mj-text></mj-column></mj-section></mj-body></mjml>`;
/** The template of the report: 3,000 nested blocks, 48 KB. */
const DEEP = wrap("{{#if x}}".repeat(3000) + "deep" + "{{/if}}".repeat(3000));
const FINE = wrap("Hello {{name}}");
/** The heaviest template the limits let through, as MJML (its HTML in an mj-raw). */
const heaviest = templateAtLimits({ reserve: 16 });
const HEAVIEST = `<mjml><mj-body><mj-raw>${heaviest.fragment}</mj-raw></mj-body></mjml>`;

const template = (name: string, mjml_content: string, subject = "Hi {{name}}") => ({ name, subject, category: "transactional", mjml_content });

describe("template limits (issue 6, defect 1)", () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform("limits");
  });
  afterAll(() => t?.close());

  it("refuses the 3,000-deep template on create with a 400 naming the field and the limit, and stores nothing", async () => {
    expect(DEEP.length).toBeGreaterThan(48_000);
    const res = await t.call("POST", "/api/v1/templates", { body: template("Deep", DEEP) });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("template_exceeds_limits");
    expect(res.body.errors).toEqual([
      { field: "mjml_content", message: expect.stringMatching(new RegExp(`^line 1: blocks nested 3,000 deep; at most ${TEMPLATE_LIMITS.blockDepth} `)) },
      { field: "mjml_content", message: `line 1: more than ${TEMPLATE_LIMITS.expressions.toLocaleString("en-US")} {{…}} expressions (comments do not count)` },
    ]);
    const subject = await t.call("POST", "/api/v1/templates", { body: template("Deep subject", FINE, "{{#if x}}".repeat(40) + "{{/if}}".repeat(40)) });
    expect([subject.status, subject.body.code, subject.body.errors[0].field]).toEqual([400, "template_exceeds_limits", "subject"]);
    expect((await t.call("GET", "/api/v1/templates")).body.items).toEqual([]);
  });

  it("refuses it on update with a 400, and the template stays as it was", async () => {
    const created = await t.call("POST", "/api/v1/templates", { body: template("Updated", FINE) });
    expect(created.status).toBe(201);
    const res = await t.call("PATCH", `/api/v1/templates/${created.body.id}`, { body: { mjml_content: DEEP } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("template_exceeds_limits");
    expect(res.body.errors[0]).toEqual({ field: "mjml_content", message: expect.stringContaining("blocks nested 3,000 deep") });
    const after = await t.call("GET", `/api/v1/templates/${created.body.id}`);
    expect([after.body.version, after.body.mjml_content]).toEqual([1, FINE]);
  });

  it("previews and sends a template just inside the limits", async () => {
    const created = await t.call("POST", "/api/v1/templates", { body: template("Heaviest", HEAVIEST, heaviest.subject) });
    expect(created.status).toBe(201);
    const preview = await t.call("POST", `/api/v1/templates/${created.body.id}/preview`, { body: { variables: heaviest.variables } });
    expect(preview.status).toBe(200);
    expect(preview.body.subject).toBe("Hello Ada");
    expect(preview.body.html).toContain("value 49 &amp; &lt;more&gt;");
    expect(preview.body.missing_variables).toEqual([]);
    const sent = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: created.body.slug, to: "heavy@example.com", variables: heaviest.variables } });
    expect(sent.status).toBe(202);
    const email = await eventually(
      () => t.call("GET", `/api/v1/emails/${sent.body.id}`),
      (res) => res.body.status !== "queued",
    );
    expect([email.body.status, email.body.error ?? ""]).toEqual(["sent", ""]);
    const message = await t.call("GET", `/api/v1/emails/${sent.body.id}/sandbox`);
    expect(message.body.html).toBe(preview.body.html);
  });

  it("answers another tenant's requests while the heaviest preview runs", async () => {
    // Tenant A's template at the limits, in a version no one rendered yet: the preview compiles it too.
    const created = await t.call("POST", "/api/v1/templates", { body: template("Heaviest again", HEAVIEST, heaviest.subject) });
    const other = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "Other tenant" } });
    const otherKey = (await t.call("POST", `/admin/v1/accounts/${other.body.id}/api-keys`, { admin: true, body: { mode: "test" } })).body.key as string;
    await t.call("POST", "/api/v1/templates", { key: otherKey, body: template("Theirs", FINE) });

    // Ordering, not timing: a worker takes A's preview (the templates
    // service's jobs-started counter moves), then tenant B asks, and B's answer
    // must come before that worker is done with A's preview (its job-duration
    // histogram has not counted it yet). With the preview on the event loop,
    // as before the fix, nothing is answered while it compiles and renders,
    // and no worker ever takes it.
    const before = await workerJobs("preview");
    let previewed = false;
    const preview = t.call("POST", `/api/v1/templates/${created.body.id}/preview`, { body: { variables: heaviest.variables } }).finally(() => {
      previewed = true;
    });
    while (!previewed && (await workerJobs("preview")).started === before.started) await new Promise((resolve) => setTimeout(resolve, 1));
    const takenByAWorker = (await workerJobs("preview")).started > before.started;
    const theirs = await t.call("GET", "/api/v1/templates", { key: otherKey });
    const finishedBeforeTheirs = (await workerJobs("preview")).finished > before.finished;

    expect((await preview).status).toBe(200);
    expect(takenByAWorker).toBe(true);
    expect([theirs.status, theirs.body.items.map((i: { name: string }) => i.name)]).toEqual([200, ["Theirs"]]);
    expect(finishedBeforeTheirs).toBe(false); // B was answered while A's preview was rendering
    expect((await workerJobs("preview")).finished).toBe(before.finished + 1);
  });
});

/**
 * Jobs of `kind` the templates service's worker threads took, and finished, so
 * far: from the process' metrics registry (what its /metrics port serves).
 */
async function workerJobs(kind: "compile" | "preview"): Promise<{ started: number; finished: number }> {
  const started = await registry.getSingleMetric("templates_worker_jobs_started_total")?.get();
  const durations = await registry.getSingleMetric("templates_worker_job_duration_seconds")?.get();
  const sum = (values: ReadonlyArray<{ labels: Record<string, unknown>; value: number; metricName?: string }> | undefined, name?: string) =>
    (values ?? []).filter((v) => v.labels.kind === kind && (name === undefined || v.metricName === name)).reduce((n, v) => n + v.value, 0);
  return { started: sum(started?.values), finished: sum(durations?.values, "templates_worker_job_duration_seconds_count") };
}

describe("templates stored before the limits (issue 6, defect 1)", () => {
  let t: TestPlatform;
  beforeAll(async () => {
    // On MongoDB, so that the test can write a version as an older release stored it.
    t = await startTestPlatform("limits_old", undefined, { mongo: true });
  });
  afterAll(() => t?.close());

  it("previews as a 400 naming the limit, and fails its mail at once with a stable reason", async () => {
    const created = await t.call("POST", "/api/v1/templates", { body: template("Old", FINE) });
    expect(created.status).toBe(201);
    const store = await openMongoStore({ url: t.mongo!.url, dbName: `${t.mongo!.dbPrefix}templates` });
    try {
      const versions = store.collection<{ _id: string; template_id: string; html: string }>("template_versions");
      const deep = "{{#if name}}".repeat(3000) + "deep" + "{{/if}}".repeat(3000);
      expect(await versions.updateOne({ template_id: created.body.id }, { $set: { html: `<html><body>${deep}</body></html>` } })).not.toBeNull();
    } finally {
      await store.close();
    }

    for (let i = 0; i < 2; i++) {
      const preview = await t.call("POST", `/api/v1/templates/${created.body.id}/preview`, { body: { variables: { name: "x" } } });
      expect([preview.status, preview.body.code]).toEqual([400, "template_exceeds_limits"]);
      expect(preview.body.errors[0]).toEqual({ field: "mjml_content", message: expect.stringMatching(/^in the HTML MJML made of it: line 1: blocks nested 3,000 deep; at most 32 /) });
    }
    for (const to of ["old1@example.com", "old2@example.com"]) {
      const sent = await t.call("POST", "/api/v1/emails/send", { body: { template_slug: created.body.slug, to, variables: { name: "x" } } });
      expect(sent.status).toBe(202);
      const email = await eventually(
        () => t.call("GET", `/api/v1/emails/${sent.body.id}`),
        (res) => res.body.status !== "queued",
      );
      // The public code; which limit is in the preview's answer (and the email's last_error, for operators).
      expect([email.body.status, email.body.error]).toEqual(["failed", "template_render_failed"]);
      expect(email.text).not.toMatch(/Maximum call stack|RangeError/);
    }
  });
});
