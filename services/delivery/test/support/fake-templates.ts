import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { templates } from "@emailsvc/proto";
import { startGrpcServer, type RunningGrpcServer } from "@emailsvc/grpc";
import { readCallContext, tenantKey, type CallContext } from "@emailsvc/tenancy";

// A fake TemplateService (the neighbour of delivery), served over real gRPC so
// that the tenant headers delivery forwards are read exactly as the real
// service reads them. Only GetCompiledTemplate is implemented.

export interface FakeTemplate {
  slug: string;
  subject: string;
  html: string;
  category?: "transactional" | "marketing";
}

interface Stored {
  id: string;
  tenant: string;
  slug: string;
  versions: { subject: string; html: string; category: templates.TemplateCategory }[];
}

export class FakeTemplates {
  private readonly byId = new Map<string, Stored>();
  private server: RunningGrpcServer | undefined;
  private seq = 0;
  /** Every call: which tenant asked for what. */
  readonly calls: { tenant: string; template: string; version: number }[] = [];
  /** When set, every call fails with this code. */
  failWith: Code | undefined;
  /** When set, a template is deleted right after a slug lookup found it (deleted between queue and send). */
  deleteAfterSlugLookup = false;

  get url(): string {
    return this.server!.url;
  }

  async start(): Promise<this> {
    this.server = await startGrpcServer({
      port: 0,
      routes: (router) =>
        router.service(templates.TemplateService, {
          getCompiledTemplate: async (req, ctx) => this.get(readCallContext(ctx), req),
        }),
    });
    return this;
  }

  async close(): Promise<void> {
    await this.server?.close(0);
  }

  /** Creates (version 1) or updates (next version) the tenant's template with this slug; returns its id. */
  put(call: CallContext, t: FakeTemplate): string {
    const tenant = tenantKey(call.tenant);
    const category = t.category === "marketing" ? templates.TemplateCategory.MARKETING : templates.TemplateCategory.TRANSACTIONAL;
    const existing = [...this.byId.values()].find((s) => s.tenant === tenant && s.slug === t.slug);
    if (existing) {
      existing.versions.push({ subject: t.subject, html: t.html, category });
      return existing.id;
    }
    const id = `tpl_${String(++this.seq).padStart(26, "0")}`;
    this.byId.set(id, { id, tenant, slug: t.slug, versions: [{ subject: t.subject, html: t.html, category }] });
    return id;
  }

  private get(call: CallContext, req: templates.GetCompiledTemplateRequest): templates.GetCompiledTemplateResponse {
    const tenant = tenantKey(call.tenant);
    this.calls.push({ tenant, template: req.template.value ?? "", version: req.version });
    if (this.failWith !== undefined) throw new ConnectError("failing on purpose", this.failWith);
    const stored =
      req.template.case === "id"
        ? this.byId.get(req.template.value)
        : req.template.case === "slug"
          ? [...this.byId.values()].find((s) => s.slug === req.template.value && s.tenant === tenant)
          : undefined;
    // Another tenant's template is not found, as in the real service.
    if (!stored || stored.tenant !== tenant) throw new ConnectError("template not found", Code.NotFound);
    const version = req.version === 0 ? stored.versions.length : req.version;
    const v = stored.versions[version - 1];
    if (!v) throw new ConnectError("version not found", Code.NotFound);
    if (this.deleteAfterSlugLookup && req.template.case === "slug") this.byId.delete(stored.id);
    return create(templates.GetCompiledTemplateResponseSchema, {
      compiled: { templateId: stored.id, slug: stored.slug, version, category: v.category, subject: v.subject, html: v.html, variables: [] },
    });
  }
}
