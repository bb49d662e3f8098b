// The rendering port. The templates service compiles MJML to HTML once per
// version; delivery fills the {{placeholders}} per message. The real renderer
// is `compileRenderer` of @emailsvc/templates (Handlebars, HTML-escaped body,
// subject without line breaks, text part derived from the HTML); this file
// only names its shape, so delivery's domain does not depend on the package.

/** One compiled template version as delivery gets it from TemplateService.GetCompiledTemplate. */
export interface CompiledTemplate {
  templateId: string;
  slug: string;
  version: number;
  category: TemplateCategory;
  /** Handlebars source of the subject. */
  subject: string;
  /** MJML compiled to HTML, still holding the {{placeholders}}. */
  html: string;
}

export type TemplateCategory = "transactional" | "marketing" | "unspecified";

/** Built-in variables the platform fills; the caller's variables win over them. */
export interface Builtins {
  email?: string;
  metadata?: Record<string, unknown>;
  unsubscribe_url?: string;
  preference_center_url?: string;
}

export interface Rendered {
  subject: string;
  html: string;
  text: string;
  /** Variables the template uses that were not given (rendered empty). */
  missing: string[];
}

export type RenderFn = (variables: Record<string, unknown>, builtins?: Builtins) => Rendered;

/** `compileRenderer` of @emailsvc/templates: compile once per version, render per message. */
export type CompileRenderer = (compiled: { subject: string; html: string }) => RenderFn;

/**
 * Compiled renderers by template version (template ids are global, so the
 * tenant is part of the key only as a second fence). Versions never change,
 * so entries never go stale; the map is bounded, least recently used first out.
 */
export interface PreparedTemplate {
  template: CompiledTemplate;
  render: RenderFn;
}

export class RendererCache {
  private readonly entries = new Map<string, PreparedTemplate>();

  constructor(
    private readonly compile: CompileRenderer,
    private readonly capacity = 500,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  static key(tenant: string, templateId: string, version: number): string {
    return `${tenant}|${templateId}|${version}`;
  }

  /** The cached renderer, refreshed as most recently used, or undefined. */
  get(key: string): PreparedTemplate | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  /** Compiles and caches; evicts the least recently used entry beyond the capacity. */
  put(key: string, template: CompiledTemplate): PreparedTemplate {
    const entry = { template, render: this.compile({ subject: template.subject, html: template.html }) };
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return entry;
  }
}
