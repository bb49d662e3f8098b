import {
  RendererCache as VersionCache,
  type Builtins,
  type MessageOptions,
  type CompileRenderer,
  type HtmlParts,
  type RenderedMessage,
  type Renderer,
  type TemplateRejectedError,
} from "@emailsvc/render";

// The rendering port. The templates service compiles MJML to HTML once per
// version; delivery fills the {{placeholders}} per message with @emailsvc/render
// (Handlebars, HTML-escaped body, subject without line breaks, text part
// derived from the HTML, TEMPLATE_LIMITS checked when a version is compiled,
// RENDER_LIMITS per message). Its contract, errors included, is that package's
// README; this file names what delivery uses of it.

export type { Builtins, CompileRenderer, HtmlParts, MessageOptions };
export type Rendered = RenderedMessage;
export type RenderFn = Renderer;

/** One compiled template version as delivery gets it from TemplateService.GetCompiledTemplate. */
export interface CompiledTemplate {
  templateId: string;
  slug: string;
  version: number;
  category: TemplateCategory;
  /** The suppression-list reasons the template's transactional mail is sent despite (domain/eligibility.ts). */
  ignoreSuppressions?: readonly IgnorableSuppression[];
  /** Handlebars source of the subject. */
  subject: string;
  /** MJML compiled to HTML, still holding the {{placeholders}}. */
  html: string;
  /** The version's sender ("" for each field it does not set); a send's own fields win. */
  sender?: { fromEmail: string; fromName: string; replyTo: string } | undefined;
}

export type TemplateCategory = "transactional" | "marketing" | "unspecified";

/** What a transactional template may send despite: a hard bounce, a complaint (the templates service's `ignore_suppressions`). */
export type IgnorableSuppression = "hard_bounce" | "complaint";

/**
 * A version ready to render messages with, or the reason it never will be
 * (over the limits, or not compiling: a property of the version, so it is
 * remembered like a renderer and the version is not compiled per message).
 */
export type PreparedTemplate =
  | { template: CompiledTemplate; render: RenderFn; rejected?: undefined }
  | { template: CompiledTemplate; render?: undefined; rejected: TemplateRejectedError };

/**
 * Compiled versions by template version (template ids are global, so the
 * tenant is part of the key only as a second fence). Versions never change,
 * so entries never go stale; bounded, least recently used first out.
 */
export class RendererCache {
  private readonly versions: VersionCache<CompiledTemplate>;

  constructor(compile: CompileRenderer, capacity = 500) {
    this.versions = new VersionCache<CompiledTemplate>({ compile, maxEntries: capacity });
  }

  get size(): number {
    return this.versions.size;
  }

  static key(tenant: string, templateId: string, version: number): string {
    return `${tenant}|${templateId}|${version}`;
  }

  /** The cached version, refreshed as most recently used, or undefined. */
  get(key: string): PreparedTemplate | undefined {
    const entry = this.versions.get(key);
    return entry && prepared(entry);
  }

  /** Compiles and caches (a version that cannot be rendered too); evicts the least recently used beyond the capacity. */
  put(key: string, template: CompiledTemplate): PreparedTemplate {
    return prepared(this.versions.prepare(key, { subject: template.subject, html: template.html }, template));
  }
}

function prepared(entry: ReturnType<VersionCache<CompiledTemplate>["prepare"]>): PreparedTemplate {
  return entry.rejected ? { template: entry.value, rejected: entry.rejected } : { template: entry.value, render: entry.renderer };
}
