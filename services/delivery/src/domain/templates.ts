import type { CallContext } from "@emailsvc/tenancy";
import type { CompiledTemplate } from "./renderer.js";

/** Where compiled templates come from: TemplateService over gRPC (rpc/templates-client.ts). */
export interface TemplateSource {
  /**
   * The current version of the tenant's template with this slug, or null when
   * the tenant has none (another tenant's slug is unknown too: the tenant
   * travels with the call).
   */
  bySlug(call: CallContext, slug: string, signal?: AbortSignal): Promise<CompiledTemplate | null>;
  /** One version of a template, or null when it no longer exists. */
  byVersion(call: CallContext, templateId: string, version: number, signal?: AbortSignal): Promise<CompiledTemplate | null>;
}

/** The templates service did not answer (down, deadline): retry later, not the caller's fault. */
export class TemplatesUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TemplatesUnavailableError";
  }
}
