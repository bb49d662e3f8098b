import { RenderLimitError, type CompiledContent, type RenderedMessage, type RendererCache, type RenderLimit, type TemplateRejectedError, type Variables } from "@emailsvc/render";

// A preview: one version rendered with the caller's variables, as a message
// would be (no built-ins: a preview has no recipient). Pure, so that it runs in
// a worker thread; its outcome is plain data, to cross back to the service.

export interface PreviewJob {
  /** The version, immutable: `<template id>:v<version>`. */
  key: string;
  content: CompiledContent;
  variables: Variables;
}

export type PreviewResult =
  | { ok: true; message: RenderedMessage }
  /** The version cannot be rendered (stored before TEMPLATE_LIMITS, or does not compile). */
  | { ok: false; kind: "rejected"; problems: TemplateRejectedError["problems"] }
  /** These variables make the message exceed RENDER_LIMITS. */
  | { ok: false; kind: "limit"; limit: RenderLimit; message: string };

/** Renders with the version's renderer from `cache` (compiled, or found rejected, once per key). */
export function renderPreview(cache: RendererCache, job: PreviewJob): PreviewResult {
  const prepared = cache.prepare(job.key, job.content, undefined);
  if (prepared.rejected) return { ok: false, kind: "rejected", problems: [...prepared.rejected.problems] };
  try {
    return { ok: true, message: prepared.renderer(job.variables) };
  } catch (err) {
    if (err instanceof RenderLimitError) return { ok: false, kind: "limit", limit: err.limit, message: err.message };
    throw err;
  }
}
