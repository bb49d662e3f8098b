// @emailsvc/render: the compile/render contract of a template version, shared
// by the templates service (checks on write, previews) and delivery (one
// message at a time). Pure: no I/O, no MJML. See README.md.
export { TEMPLATE_LIMITS, RENDER_LIMITS, type TemplateLimit, type RenderLimit } from "./limits.js";
export { handlebarsBounds, htmlBounds, markupBounds, type TemplateProblem } from "./bounds.js";
export { scanHandlebars, scanMarkup, type HandlebarsShape, type MustacheKind, type Peak } from "./scan.js";
export { analyzeTemplate, VARIABLE_NAME, type AnalyzeOptions, type SyntaxAnalysis, type SyntaxProblem } from "./syntax.js";
export {
  compileRenderer,
  joinParts,
  readsVariable,
  mergeVariables,
  sanitizeSubject,
  RenderLimitError,
  TemplateRejectedError,
  type Builtins,
  type MessageOptions,
  type CompiledContent,
  type CompileRenderer,
  type HtmlParts,
  type RenderedMessage,
  type Renderer,
  type Variables,
} from "./renderer.js";
export { compileTextTemplate, htmlToText, type TextTemplate } from "./text.js";
export { guardUrlAttributes, isSafeUrl, UNSAFE_LINK, UNSAFE_RESOURCE, type GuardedHtml } from "./urls.js";
export { DEFAULT_LANGUAGE, languageOf } from "./language.js";
export { RendererCache, type PreparedTemplate, type RendererCacheOptions } from "./cache.js";
export { templateAtLimits, type AtLimits } from "./fixtures.js";
