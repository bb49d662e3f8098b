// An in-memory stand-in for the templates service, served over
// createRouterTransport. It follows the contract (tenant from headers, slugs
// unique per tenant, versions bumped by subject/MJML changes, AppErrors with
// ErrorDetail, MJML errors naming the line) with toy "MJML" rules: markup must
// be wrapped in <mjml>…</mjml> and may not use an element named <mj-bogus>.

import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { health, templates } from "@emailsvc/proto";
import { AppError, invalid, notFound } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { FakeService } from "./fake-service";
import { paginate } from "./fake-subscribers";

const { TemplateCategory, TemplateSchema, CompiledTemplateSchema } = templates;

interface Tenant {
  templates: templates.Template[];
}

const VARIABLE = /\{\{\s*([A-Za-z0-9_.]+)\s*\}\}/g;

export function variablesOf(...sources: string[]): string[] {
  const names = new Set<string>();
  for (const source of sources) for (const match of source.matchAll(VARIABLE)) names.add(match[1]!);
  return [...names].sort();
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function lookup(variables: JsonObject, path: string): JsonValue | undefined {
  let node: JsonValue | undefined = variables;
  for (const part of path.split(".")) {
    node = node !== null && typeof node === "object" && !Array.isArray(node) ? node[part] : undefined;
  }
  return node;
}

/** Fills `{{name}}`; returns the names that had no value. */
export function render(source: string, variables: JsonObject, escape: boolean): { out: string; missing: string[] } {
  const missing: string[] = [];
  const out = source.replace(VARIABLE, (_all, name: string) => {
    const value = lookup(variables, name);
    if (value === undefined || value === null) {
      missing.push(name);
      return "";
    }
    const text = typeof value === "object" ? JSON.stringify(value) : String(value);
    return escape ? escapeHtml(text) : text;
  });
  return { out, missing };
}

function checkMjml(mjml: string): void {
  const lines = mjml.split("\n");
  const bogus = lines.findIndex((line) => line.includes("<mj-bogus"));
  if (bogus >= 0) {
    throw invalid("mjml_content does not compile", [
      { field: "mjml_content", description: `line ${bogus + 1}: element <mj-bogus> is not a known MJML element` },
    ]);
  }
  if (!mjml.trimStart().startsWith("<mjml>") || !mjml.trimEnd().endsWith("</mjml>")) {
    throw invalid("mjml_content does not compile", [{ field: "mjml_content", description: "line 1: the root element must be <mjml>" }]);
  }
}

export class FakeTemplates extends FakeService<Tenant> {
  protected newTenant(): Tenant {
    return { templates: [] };
  }

  /** A tenant's template by slug, for the fake delivery service. */
  bySlug(tenantKey: string, slug: string): templates.Template | undefined {
    return this.tenant(tenantKey).templates.find((t) => t.slug === slug);
  }

  routes(): (router: ConnectRouter) => void {
    return (router) => {
      router.service(templates.TemplateService, {
        createTemplate: (req, ctx) =>
          this.handle("createTemplate", ctx, (t) => {
            checkMjml(req.mjmlContent);
            const slug = req.slug ?? req.name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
            const existing = t.templates.find((x) => x.slug === slug);
            if (existing) throw new AppError("conflict", "slug_taken", "a template with this slug exists", { existingId: existing.id });
            const now = timestampFromDate(new Date());
            const template = create(TemplateSchema, {
              id: newId("tpl"),
              slug,
              name: req.name,
              subject: req.subject,
              mjmlContent: req.mjmlContent,
              category: req.category || TemplateCategory.TRANSACTIONAL,
              version: 1,
              variables: variablesOf(req.subject, req.mjmlContent),
              createdAt: now,
              updatedAt: now,
            });
            t.templates.push(template);
            return { template };
          }),
        getTemplate: (req, ctx) => this.handle("getTemplate", ctx, (t) => ({ template: this.find(t, req.id) })),
        listTemplates: (req, ctx) =>
          this.handle("listTemplates", ctx, (t) => {
            const { items, nextCursor } = paginate(t.templates, req.limit, req.cursor);
            return { templates: items, nextCursor };
          }),
        updateTemplate: (req, ctx) =>
          this.handle("updateTemplate", ctx, (t) => {
            const template = this.find(t, req.id);
            if (req.mjmlContent !== undefined) checkMjml(req.mjmlContent);
            const changesContent =
              (req.subject !== undefined && req.subject !== template.subject) ||
              (req.mjmlContent !== undefined && req.mjmlContent !== template.mjmlContent);
            if (req.name !== undefined) template.name = req.name;
            if (req.subject !== undefined) template.subject = req.subject;
            if (req.mjmlContent !== undefined) template.mjmlContent = req.mjmlContent;
            if (req.category) template.category = req.category;
            if (changesContent) {
              template.version += 1;
              template.variables = variablesOf(template.subject, template.mjmlContent);
            }
            template.updatedAt = timestampFromDate(new Date());
            return { template };
          }),
        deleteTemplate: (req, ctx) =>
          this.handle("deleteTemplate", ctx, (t) => {
            const template = this.find(t, req.id);
            t.templates = t.templates.filter((x) => x !== template);
            return {};
          }),
        previewTemplate: (req, ctx) =>
          this.handle("previewTemplate", ctx, (t) => {
            const template = this.find(t, req.id);
            const variables = req.variables ?? {};
            const html = render(template.mjmlContent.replace(/<\/?mj[a-z-]*>/g, ""), variables, true);
            const subject = render(template.subject, variables, false);
            return {
              html: `<!doctype html><html><body>${html.out.trim()}</body></html>`,
              subject: subject.out,
              text: html.out.replace(/<[^>]+>/g, "").trim(),
              missingVariables: [...new Set([...subject.missing, ...html.missing])].sort(),
            };
          }),
        getCompiledTemplate: (req, ctx) =>
          this.handle("getCompiledTemplate", ctx, (t) => {
            const template =
              req.template.case === "id" ? this.find(t, req.template.value) : t.templates.find((x) => x.slug === req.template.value);
            if (!template) throw notFound("template");
            return {
              compiled: create(CompiledTemplateSchema, {
                templateId: template.id,
                slug: template.slug,
                version: template.version,
                category: template.category,
                subject: template.subject,
                html: template.mjmlContent,
                variables: template.variables,
              }),
            };
          }),
      });
      router.service(health.Health, this.healthImpl());
    };
  }

  private find(t: Tenant, id: string): templates.Template {
    const template = t.templates.find((x) => x.id === id);
    if (!template) throw notFound("template");
    return template;
  }
}
