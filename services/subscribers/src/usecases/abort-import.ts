import type { Scope } from "./deps.js";
import { loadImport, type ImportDeps } from "./import-deps.js";
import { failUpload } from "./start-import.js";

/** The upload was cut (the client went away, or sent too much): a job still uploading fails `upload_aborted`; others are left as they are. */
export async function abortImport(deps: ImportDeps, scope: Scope, jobId: string): Promise<void> {
  const job = await loadImport(scope, jobId);
  if (job.state === "uploading") await failUpload(deps, scope, job._id, "upload_aborted");
}
