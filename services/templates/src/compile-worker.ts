import { parentPort, workerData } from "node:worker_threads";
import { RendererCache } from "@emailsvc/render";
import { compileTemplateBody } from "./domain/body.js";
import { renderPreview, type PreviewJob } from "./domain/preview.js";
import type { WorkerReply, WorkerRequest } from "./compile-pool.js";

// Worker thread of the BodyCompilerPool: one job at a time, a compile (MJML,
// on write) or a preview (render, with this thread's own cache of versions).
const renderers = new RendererCache({ maxEntries: (workerData as { renderers?: number } | undefined)?.renderers ?? 100 });

const reply = (message: WorkerReply) => parentPort!.postMessage(message);
const failed = (id: number, err: unknown) => reply({ id, error: err instanceof Error ? err.message : String(err) });

parentPort!.on("message", (job: WorkerRequest) => {
  if (job.kind === "preview") {
    try {
      reply({ id: job.id, result: renderPreview(renderers, job.preview as PreviewJob) });
    } catch (err) {
      failed(job.id, err);
    }
    return;
  }
  compileTemplateBody(job.mjml).then(
    (result) => reply({ id: job.id, result }),
    (err: unknown) => failed(job.id, err),
  );
});
