import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { callHeaders, type CallContext } from "@emailsvc/tenancy";
import type { CompiledTemplate, IgnorableSuppression, TemplateCategory } from "../domain/renderer.js";
import { TemplatesUnavailableError, type TemplateSource } from "../domain/templates.js";

// TemplateSource over gRPC: TemplateService.GetCompiledTemplate, with the
// caller's tenant in the headers (so another tenant's slug is simply unknown).

function categoryOf(category: templates.TemplateCategory): TemplateCategory {
  switch (category) {
    case templates.TemplateCategory.TRANSACTIONAL:
      return "transactional";
    case templates.TemplateCategory.MARKETING:
      return "marketing";
    default:
      return "unspecified";
  }
}

export function templatesClient(transport: Transport, options: { timeoutMs?: number } = {}): TemplateSource {
  const client = createClient(templates.TemplateService, transport);
  const timeoutMs = options.timeoutMs ?? 5000;

  async function get(
    call: CallContext,
    template: { case: "slug"; value: string } | { case: "id"; value: string },
    version: number,
    signal: AbortSignal | undefined,
  ): Promise<CompiledTemplate | null> {
    let compiled;
    try {
      const res = await client.getCompiledTemplate(
        { template, version },
        { headers: callHeaders(call), timeoutMs, ...(signal ? { signal } : {}) },
      );
      compiled = res.compiled;
    } catch (err) {
      const ce = ConnectError.from(err);
      // A slug or id the templates service rejects as malformed cannot name a template either.
      if (ce.code === Code.NotFound || ce.code === Code.InvalidArgument) return null;
      throw new TemplatesUnavailableError(`GetCompiledTemplate failed: ${Code[ce.code]}`);
    }
    if (!compiled) throw new TemplatesUnavailableError("GetCompiledTemplate returned no template");
    return {
      templateId: compiled.templateId,
      slug: compiled.slug,
      version: compiled.version,
      category: categoryOf(compiled.category),
      // Reasons this build does not know are left out: the mail is then skipped, as by default.
      ignoreSuppressions: compiled.ignoreSuppressions.filter((r): r is IgnorableSuppression => r === "hard_bounce" || r === "complaint"),
      subject: compiled.subject,
      html: compiled.html,
      sender: { fromEmail: compiled.fromEmail, fromName: compiled.fromName, replyTo: compiled.replyTo },
    };
  }

  return {
    bySlug: (call, slug, signal) => get(call, { case: "slug", value: slug }, 0, signal),
    byVersion: (call, templateId, version, signal) => get(call, { case: "id", value: templateId }, version, signal),
  };
}
