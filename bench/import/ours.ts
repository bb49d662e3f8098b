// Our side of the import benchmark: the public import API of issue 18
// (`POST /api/v1/subscribers/imports`, then the job polled), and the check of
// what it wrote, by the subscribers service's store.
import { openAsBlob } from "node:fs";
import { openStore } from "@emailsvc/storage";
import { api } from "../support/platform.js";
import type { ImportFile } from "./generate.js";

/** The job's counts as GET /api/v1/subscribers/imports/{id} shows them. */
export interface JobCounts {
  rows_read: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
}

/**
 * Starts an import of the file through the public API: the CSV as the body,
 * the options as query parameters (create only; which column is what). The
 * one function that knows the request's shape; resolves the job's id.
 */
export async function startImport(base: string, key: string, file: ImportFile): Promise<string> {
  // The tags cell holds names separated by `;` (TAG_SEPARATOR), which the import splits on, as it does on `,`.
  const query = new URLSearchParams({
    mode: "create",
    email_column: "email",
    tags_column: "tags",
    metadata_columns: "name,city,plan",
  });
  const res = await fetch(`${base}/api/v1/subscribers/imports?${query}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "text/csv" },
    body: await openAsBlob(file.path),
  });
  const text = await res.text();
  // Without the route, /subscribers/{id} takes the path: 405 (404 on a gateway without that either).
  if (res.status === 404 || res.status === 405) {
    throw new Error(
      `POST /api/v1/subscribers/imports answered ${res.status}: the import API (issue 18's bulk import) is not in this build. ` +
        "Build a branch that has it, or run listmonk's side alone (IMPORT_BENCH_EMBEDDED=off IMPORT_BENCH_SPLIT=off).",
    );
  }
  if (res.status !== 202 && res.status !== 201) throw new Error(`POST /api/v1/subscribers/imports: ${res.status} ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}

/** A job whose rows read stay the same this long has stalled: the run fails instead of waiting for ever. */
const STALL_MS = 5 * 60_000;

/** Polls the job until it is no longer queued or running; resolves its last view. */
export async function waitForImport(base: string, key: string, id: string, log: (line: string) => void, t0: number): Promise<{ state: string } & JobCounts> {
  let lastLog = 0;
  let lastRead = -1;
  let lastProgress = performance.now();
  for (;;) {
    const job = await api(base, key, "GET", `/api/v1/subscribers/imports/${id}`);
    if (job.status !== 200) throw new Error(`GET /api/v1/subscribers/imports/${id}: ${job.status} ${JSON.stringify(job.body)}`);
    // The counts as the job shows them (nested under `counts`, or beside its state).
    const body = job.body as { state: string; counts?: JobCounts } & Partial<JobCounts>;
    const view = { state: body.state, ...(body.counts ?? (body as JobCounts)) };
    if (!["uploading", "queued", "running"].includes(view.state)) return view;
    if (view.rows_read !== lastRead) {
      lastRead = view.rows_read;
      lastProgress = performance.now();
    } else if (performance.now() - lastProgress > STALL_MS) {
      throw new Error(`import ${id} stalled: ${view.state}, ${view.rows_read} rows read, none more for ${STALL_MS / 60_000} min`);
    }
    if (performance.now() - lastLog > 5000) {
      lastLog = performance.now();
      log(`  ${((performance.now() - t0) / 1000).toFixed(1)} s: ${view.state}, ${view.rows_read} read, ${view.created} created, ${view.skipped} skipped, ${view.failed} failed`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Every good row exactly once, by the subscribers service's own store (after
 * the platform stopped): `missing` good addresses with no live subscriber
 * (the erased ones excepted), `extra` subscribers the file does not explain
 * (an erased address back, an address twice, anything else), `wrong` ones
 * whose metadata or tags are not their address's first row's.
 */
export async function checkOurs(store: { mongoUrl?: string; dataDir?: string; dbName: string }, tenant: string, file: ImportFile): Promise<{ missing: number; extra: number; wrong: number }> {
  const opened = await openStore(store);
  try {
    const docs = await opened.collection("subscribers").find({ tenant });
    const tagNames = new Map((await opened.collection("tags").find({ tenant })).map((t) => [t._id as string, t.name as string]));
    const live = docs.filter((d) => d.deleted !== true);
    const erased = new Set(file.erased);
    const seen = new Map<string, number>();
    let wrong = 0;
    for (const d of live) {
      const key = d.email_key as string;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      const want = file.values.get(key);
      if (!want) continue;
      const metadata = d.metadata as Record<string, unknown>;
      const tags = (d.tag_ids as string[]).map((id) => tagNames.get(id)).sort();
      if (metadata.name !== want.name || metadata.city !== want.city || metadata.plan !== want.plan || tags.join(",") !== [...want.tags].sort().join(",")) wrong++;
    }
    let missing = 0;
    for (const address of file.good) if (!erased.has(address) && seen.get(address) === undefined) missing++;
    const expected = new Set(file.good.filter((address) => !erased.has(address)));
    let extra = 0;
    for (const [address, count] of seen) extra += expected.has(address) ? count - 1 : count;
    return { missing, extra, wrong };
  } finally {
    await opened.close();
  }
}
