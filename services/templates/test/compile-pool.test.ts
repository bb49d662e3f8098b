import { existsSync } from "node:fs";
import { AppError } from "@emailsvc/errors";
import { registry } from "@emailsvc/telemetry";
import { RendererCache } from "@emailsvc/render";
import { BodyCompilerPool } from "../src/compile-pool.js";
import { compileTemplateBody } from "../src/domain/body.js";
import { renderPreview, type PreviewJob } from "../src/domain/preview.js";
import { mjmlWith, WORKER_SCRIPT } from "./harness.js";

describe("compile worker pool", () => {
  beforeAll(() => {
    if (!existsSync(WORKER_SCRIPT)) throw new Error(`${WORKER_SCRIPT} is missing: build first (npm test does)`);
  });

  it("compiles in worker threads exactly as in process, several at once", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 2 });
    try {
      const sources = [mjmlWith("a {{x}}"), mjmlWith("b {{y}}"), mjmlWith("c {{{z}}}"), "<mjml><mj-body><mj-colum></mj-colum></mj-body></mjml>", mjmlWith("d")];
      const [inWorkers, inProcess] = await Promise.all([Promise.all(sources.map((s) => pool.compile(s))), Promise.all(sources.map(compileTemplateBody))]);
      expect(inWorkers).toEqual(inProcess);
      expect(inWorkers.map((r) => (r.ok ? "ok" : r.kind))).toEqual(["ok", "ok", "template", "mjml", "ok"]);
      expect(pool.workers).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it("previews in worker threads exactly as in process: messages, versions that cannot render, messages too large", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 2 });
    try {
      const html = "<html><body><p>Hi {{name}}</p>{{#each rows}}<i>{{this}}</i>{{/each}}</body></html>";
      const deep = "{{#if x}}".repeat(3000) + "{{/if}}".repeat(3000);
      const jobs: PreviewJob[] = [
        { key: "tpl_a:v1", content: { subject: "Hi {{name}}", html }, variables: { name: "<Ada>", rows: [1, 2] } },
        { key: "tpl_a:v1", content: { subject: "Hi {{name}}", html }, variables: {} },
        { key: "tpl_b:v1", content: { subject: "s", html: deep }, variables: {} },
        { key: "tpl_a:v1", content: { subject: "Hi {{name}}", html }, variables: { rows: Array.from({ length: 20_000 }, () => 1) } },
      ];
      const inProcess = new RendererCache();
      const [inWorkers, here] = await Promise.all([Promise.all(jobs.map((j) => pool.preview(j))), jobs.map((j) => renderPreview(inProcess, j))]);
      expect(inWorkers).toEqual(here);
      expect(inWorkers.map((r) => (r.ok ? "ok" : r.kind))).toEqual(["ok", "ok", "rejected", "limit"]);
      expect(inWorkers[0]).toMatchObject({ ok: true, message: { subject: "Hi <Ada>", missing: [] } });
      expect(inWorkers[2]).toMatchObject({ ok: false, problems: [{ part: "html", limit: "blockDepth" }, { part: "html", limit: "expressions" }] });
    } finally {
      await pool.close();
    }
  });

  it("abandons a preview past its timeout with a 503, and keeps serving", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1, previewTimeoutMs: 1 });
    try {
      const html = `<html><body>${"<p>{{x}}</p>".repeat(900)}</body></html>`;
      const slow = pool.preview({ key: "tpl_c:v1", content: { subject: "s", html }, variables: { x: "y".repeat(500) } });
      await expect(slow).rejects.toMatchObject({ kind: "unavailable", code: "busy" });
      expect((await pool.compile(mjmlWith("after"))).ok).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it("abandons a compile past the timeout and keeps serving", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1, timeoutMs: 1 });
    try {
      const big = mjmlWith("x".repeat(10), "<mj-section><mj-column><mj-text>y</mj-text></mj-column></mj-section>\n".repeat(400));
      const result = await pool.compile(big);
      expect(result).toEqual({ ok: false, kind: "mjml", problems: [{ line: 0, message: "takes longer than 1 ms to compile; make the template smaller" }] });
    } finally {
      await pool.close();
    }
    const patient = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1 });
    try {
      expect((await patient.compile(mjmlWith("fine"))).ok).toBe(true);
    } finally {
      await patient.close();
    }
  });

  it("refuses work beyond its queue and after close", async () => {
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1, maxQueue: 1 });
    const first = pool.compile(mjmlWith("1")); // dispatched at once
    const second = pool.compile(mjmlWith("2")); // queued
    await expect(pool.compile(mjmlWith("3"))).rejects.toMatchObject({ kind: "unavailable", code: "busy" });
    expect((await first).ok).toBe(true);
    expect((await second).ok).toBe(true);
    await pool.close();
    const late = await pool.compile(mjmlWith("4")).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(AppError);
    expect(pool.workers).toBe(0);
  });

  it("counts the jobs its workers take and how long each held a worker, by kind and outcome", async () => {
    const jobs = async () => {
      const started = (await registry.getSingleMetric("templates_worker_jobs_started_total")!.get()).values;
      const held = (await registry.getSingleMetric("templates_worker_job_duration_seconds")!.get()).values as Array<{ metricName?: string; labels: Record<string, unknown>; value: number }>;
      const count = (kind: string, outcome: string) =>
        held.find((v) => v.metricName === "templates_worker_job_duration_seconds_count" && v.labels.kind === kind && v.labels.outcome === outcome)?.value ?? 0;
      return {
        started: { compile: started.find((v) => v.labels.kind === "compile")?.value ?? 0, preview: started.find((v) => v.labels.kind === "preview")?.value ?? 0 },
        ok: { compile: count("compile", "ok"), preview: count("preview", "ok") },
        abandoned: count("preview", "abandoned"),
      };
    };
    const pool = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1 });
    const impatient = new BodyCompilerPool({ script: WORKER_SCRIPT, size: 1, previewTimeoutMs: 1 });
    try {
      const before = await jobs();
      expect((await pool.compile(mjmlWith("a {{x}}"))).ok).toBe(true);
      expect((await pool.preview({ key: "tpl_m:v1", content: { subject: "s", html: "<p>{{x}}</p>" }, variables: { x: 1 } })).ok).toBe(true);
      const html = `<html><body>${"<p>{{x}}</p>".repeat(900)}</body></html>`;
      await expect(impatient.preview({ key: "tpl_n:v1", content: { subject: "s", html }, variables: { x: "y".repeat(500) } })).rejects.toMatchObject({ code: "busy" });
      expect(await jobs()).toEqual({
        started: { compile: before.started.compile + 1, preview: before.started.preview + 2 },
        ok: { compile: before.ok.compile + 1, preview: before.ok.preview + 1 },
        abandoned: before.abandoned + 1,
      });
    } finally {
      await Promise.all([pool.close(), impatient.close()]);
    }
  });
});
