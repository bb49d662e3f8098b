import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { RendererCache } from "@emailsvc/render";
import { AppError } from "@emailsvc/errors";
import { counter, histogram } from "@emailsvc/telemetry";
import { compileTemplateBody, type BodyResult } from "./domain/body.js";
import { renderPreview, type PreviewJob, type PreviewResult } from "./domain/preview.js";
import type { BodyCompiler } from "./usecases/ports.js";

// MJML compiles take milliseconds for a newsletter but seconds for a 512 KiB
// template (≈ 4 s measured), all of it synchronous CPU. Run on the event loop,
// that would stall every other call of the service (health checks, previews,
// delivery's GetCompiledTemplate). So compiles run in worker threads, and so do
// previews: compiling a version for rendering costs ≈ 100 ms at the limits of
// @emailsvc/render (p99 ≈ 225 ms), and rendering a message ≈ 25 ms, which one
// tenant's previews must not take from every other caller (see the README).

// The pool's own metrics. Labels are the job's kind and outcome: never a
// tenant or a template. `started` moves when a worker takes a job, so the rate
// of previews and compiles, and with the histogram how long they hold a worker,
// can be read apart from the gRPC calls that wait for them.
const jobsStarted = counter("templates_worker_jobs_started_total", "Jobs a worker thread took: compile (on write) or preview.", ["kind"]);
const jobDuration = histogram("templates_worker_job_duration_seconds", "Time one job held a worker thread, by kind and outcome (ok, failed, abandoned).", [
  "kind",
  "outcome",
]);

export type { BodyCompiler };

/** What the pool posts to a worker, and what comes back. */
export type WorkerRequest = { id: number; kind: "compile"; mjml: string } | { id: number; kind: "preview"; preview: PreviewJob };
export interface WorkerReply {
  id: number;
  result?: unknown;
  error?: string;
}

export interface PoolOptions {
  /** Worker script (the built compile-worker.js). */
  script: string;
  /** Worker threads; default: cores - 1, at least 1, at most 4. */
  size?: number;
  /** A compile taking longer is abandoned (its worker is replaced). Default 20 s. */
  timeoutMs?: number;
  /** A preview taking longer is abandoned (503; its worker is replaced). Default 5 s. */
  previewTimeoutMs?: number;
  /** Jobs waiting beyond this many are refused with 503. Default 64. */
  maxQueue?: number;
  /** Compiled versions each worker keeps for previews. Default 100. */
  renderers?: number;
}

type Job = { request: WorkerRequest; resolve: (result: unknown) => void; reject: (err: unknown) => void; started?: number };

interface Slot {
  worker: Worker;
  job: Job | undefined;
  timer: NodeJS.Timeout | undefined;
}

const seconds = (ms: number) => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

/** Compiles and previews in this thread: for tests and tools. */
export function inProcessCompiler(options: { renderers?: number } = {}): BodyCompiler {
  const renderers = new RendererCache({ maxEntries: options.renderers ?? 100 });
  return { compile: compileTemplateBody, preview: async (job) => renderPreview(renderers, job), close: async () => undefined };
}

/** Worker threads when the built worker script is there (running from dist), else in process. */
export function defaultCompiler(options: Omit<PoolOptions, "script"> = {}): BodyCompiler {
  const script = join(__dirname, "compile-worker.js");
  return existsSync(script) ? new BodyCompilerPool({ ...options, script }) : inProcessCompiler(options);
}

export class BodyCompilerPool implements BodyCompiler {
  private readonly size: number;
  private readonly timeoutMs: number;
  private readonly previewTimeoutMs: number;
  private readonly maxQueue: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: PoolOptions) {
    this.size = options.size ?? Math.max(1, Math.min(4, availableParallelism() - 1));
    this.timeoutMs = options.timeoutMs ?? 20_000;
    this.previewTimeoutMs = options.previewTimeoutMs ?? 5_000;
    this.maxQueue = options.maxQueue ?? 64;
  }

  compile(mjml: string): Promise<BodyResult> {
    return this.submit<BodyResult>({ id: this.nextId++, kind: "compile", mjml });
  }

  preview(job: PreviewJob): Promise<PreviewResult> {
    return this.submit<PreviewResult>({ id: this.nextId++, kind: "preview", preview: job });
  }

  private submit<T>(request: WorkerRequest): Promise<T> {
    if (this.closed) return Promise.reject(new AppError("unavailable", "shutting_down", "the service is shutting down"));
    if (this.queue.length >= this.maxQueue) {
      return Promise.reject(new AppError("unavailable", "busy", "too many templates are being compiled or previewed; retry shortly"));
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ request, resolve: resolve as (result: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Workers started so far (they start on demand). */
  get workers(): number {
    return this.slots.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new AppError("unavailable", "shutting_down", "the service is shutting down"));
    // Compiles in flight finish (close() runs after the server drained its calls).
    await Promise.all(
      this.slots.map(async (slot) => {
        while (slot.job) await new Promise((r) => setTimeout(r, 10));
        await slot.worker.terminate();
      }),
    );
    this.slots.length = 0;
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      const job = this.queue.shift()!;
      slot.job = job;
      job.started = performance.now();
      jobsStarted.inc({ kind: job.request.kind });
      slot.timer = setTimeout(() => this.abandon(slot!), job.request.kind === "preview" ? this.previewTimeoutMs : this.timeoutMs);
      slot.worker.postMessage(job.request);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(this.options.script, { workerData: { renderers: this.options.renderers } });
    const slot: Slot = { worker, job: undefined, timer: undefined };
    worker.on("message", (msg: WorkerReply) => {
      const job = slot.job;
      if (!job || job.request.id !== msg.id) return;
      this.finish(slot);
      observe(job, msg.result ? "ok" : "failed");
      if (msg.result) job.resolve(msg.result);
      else job.reject(new Error(`${job.request.kind} failed: ${msg.error ?? "unknown"}`));
      this.dispatch();
    });
    const lost = (reason: unknown) => {
      const job = slot.job;
      this.remove(slot);
      if (job) observe(job, "failed");
      job?.reject(reason instanceof Error ? reason : new Error(`compile worker exited: ${String(reason)}`));
      if (!this.closed) this.dispatch();
    };
    worker.on("error", lost);
    worker.on("exit", (code) => {
      if (this.slots.includes(slot)) lost(new Error(`compile worker exited with code ${code}`));
    });
    this.slots.push(slot);
    return slot;
  }

  private finish(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.job = undefined;
  }

  private remove(slot: Slot): void {
    this.finish(slot);
    const at = this.slots.indexOf(slot);
    if (at !== -1) this.slots.splice(at, 1);
  }

  /** A job ran past its timeout: the worker is stopped and replaced on demand. */
  private abandon(slot: Slot): void {
    const job = slot.job;
    this.remove(slot);
    void slot.worker.terminate();
    if (job) observe(job, "abandoned");
    if (job?.request.kind === "preview") {
      // Within the limits a preview takes well under a second: past the timeout the machine is overloaded.
      job.reject(new AppError("unavailable", "busy", `the preview took longer than ${seconds(this.previewTimeoutMs)}; retry shortly`));
    } else {
      job?.resolve({
        ok: false,
        kind: "mjml",
        problems: [{ line: 0, message: `takes longer than ${seconds(this.timeoutMs)} to compile; make the template smaller` }],
      } satisfies BodyResult);
    }
    this.dispatch();
  }
}

function observe(job: Job, outcome: "ok" | "failed" | "abandoned"): void {
  if (job.started !== undefined) jobDuration.observe({ kind: job.request.kind, outcome }, (performance.now() - job.started) / 1000);
}
