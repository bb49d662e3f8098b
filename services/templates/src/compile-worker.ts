import { parentPort } from "node:worker_threads";
import { compileTemplateBody } from "./domain/body.js";

// Worker thread of the BodyCompilerPool: one compile at a time.
parentPort!.on("message", (job: { id: number; mjml: string }) => {
  compileTemplateBody(job.mjml).then(
    (result) => parentPort!.postMessage({ id: job.id, result }),
    (err: unknown) => parentPort!.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
