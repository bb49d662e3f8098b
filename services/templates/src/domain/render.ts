import Handlebars from "handlebars";
import { compile as compileHtmlToText } from "html-to-text";
import { analyzeTemplate } from "./template-syntax.js";

// Per-message rendering of a compiled template version: Handlebars fills the
// {{variables}} of the subject and of the HTML (which MJML compiled once, on
// write), and a plain-text part is derived from the rendered HTML.
//
// Pure (no I/O) and cheap to import (no MJML): delivery imports it as
// `@emailsvc/templates/render`. Compile a version once with compileRenderer()
// (or through a RendererCache) and call the renderer per message.

/** A compiled template version: what GetCompiledTemplate returns. */
export interface CompiledContent {
  /** Handlebars source of the subject. */
  subject: string;
  /** HTML (MJML already compiled) still holding its {{placeholders}}. */
  html: string;
  /** The variables subject and HTML use; computed from them when absent. */
  variables?: readonly string[];
}

/** JSON-like values the caller passes per message. */
export type Variables = Record<string, unknown>;

/**
 * Variables every message gets without the caller passing them (DESIGN.md,
 * "Email pipeline"). The caller's variables win over them. The two URLs are a
 * seam for the preference portal: empty (and listed as missing when a template
 * uses them) until the portal provides them.
 */
export interface Builtins {
  email?: string;
  metadata?: Record<string, unknown>;
  preference_center_url?: string;
  unsubscribe_url?: string;
}

export interface RenderedMessage {
  /** One line: CR, LF and other control characters become spaces. */
  subject: string;
  html: string;
  /** Plain-text part derived from `html`. */
  text: string;
  /** Variables the template uses that were neither given nor built in (rendered empty), sorted. */
  missing: string[];
}

export type Renderer = (variables?: Variables, builtins?: Builtins) => RenderedMessage;

// One Handlebars environment for rendering. Only if/unless/each may run as
// helpers (the templates were checked on write to use nothing else);
// knownHelpersOnly also turns `{{log}}` or `{{lookup}}` into plain variable reads.
const handlebars = Handlebars.create();
const HELPERS = {
  if: true,
  unless: true,
  each: true,
  with: false,
  log: false,
  lookup: false,
  helperMissing: false,
  blockHelperMissing: false,
};
/**
 * What one message may cost: `{{#each}}` iterations (all blocks together) and
 * characters produced inside them. Nested each blocks over the caller's lists
 * could otherwise render for minutes (three levels over 1,000 items is 10⁹).
 */
export const RENDER_LIMITS = { eachIterations: 10_000, eachOutputChars: 16 * 1024 * 1024 } as const;

/** A message would exceed RENDER_LIMITS. */
export class RenderLimitError extends Error {
  constructor(readonly limit: "eachIterations" | "eachOutputChars") {
    super(
      limit === "eachIterations"
        ? `more than ${RENDER_LIMITS.eachIterations} {{#each}} iterations in one message`
        : `more than ${RENDER_LIMITS.eachOutputChars} characters rendered by {{#each}} blocks in one message`,
    );
    this.name = "RenderLimitError";
  }
}

interface Budget {
  iterations: number;
  chars: number;
}

// `each` as built in, with every iteration counted against the message's budget
// (passed in the render's @data, which Handlebars copies into each frame).
const builtinEach = handlebars.helpers.each as (this: unknown, context: unknown, options: Handlebars.HelperOptions) => string;
handlebars.registerHelper("each", function (this: unknown, context: unknown, options: Handlebars.HelperOptions) {
  const budget = (options.data as { budget?: Budget } | undefined)?.budget;
  if (!budget) return builtinEach.call(this, context, options);
  const fn = options.fn;
  const counted = Object.assign((item: unknown, opts?: Handlebars.RuntimeOptions) => {
    if (--budget.iterations < 0) throw new RenderLimitError("eachIterations");
    const out = fn(item, opts);
    budget.chars -= out.length;
    if (budget.chars < 0) throw new RenderLimitError("eachOutputChars");
    return out;
  }, fn);
  return builtinEach.call(this, context, { ...options, fn: counted });
});

const BODY_OPTIONS: CompileOptions = { knownHelpersOnly: true, knownHelpers: HELPERS, strict: false, noEscape: false };
const SUBJECT_OPTIONS: CompileOptions = { knownHelpersOnly: true, knownHelpers: HELPERS, strict: false, noEscape: true };

// Compiled once per process and reused (≈ 0.3 ms per message against 0.7 ms
// when built per call; TOOLCHAIN.md).
const toText = compileHtmlToText({
  wordwrap: 78,
  selectors: [
    // MJML's hidden preview text (mj-preview) is not part of the message body.
    { selector: "div[style*='display:none']", format: "skip" },
    { selector: "img", format: "skip" },
    { selector: "a", options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
  ],
});

const BODY_START = /<body[\s>]/i;

/** Derives the plain-text part of an HTML email. */
export function htmlToText(html: string): string {
  // Only the body becomes text; handing over the body alone spares parsing
  // the head (MJML's styles and Outlook conditionals), ≈ 30 % of the cost.
  const body = html.search(BODY_START);
  return toText(body > 0 ? html.slice(body) : html).trim();
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]+/g;

/** Makes a rendered subject one header-safe line (no CR/LF: no header injection). */
export function sanitizeSubject(subject: string): string {
  return subject.replace(CONTROL, " ").replace(/ {2,}/g, " ").trim();
}

export function compileRenderer(compiled: CompiledContent): Renderer {
  const variables =
    compiled.variables ??
    [
      ...new Set([
        ...analyzeTemplate(compiled.subject, { allowTripleStash: true }).variables,
        ...analyzeTemplate(compiled.html, { allowTripleStash: false }).variables,
      ]),
    ].sort();
  const subject = handlebars.compile(compiled.subject, SUBJECT_OPTIONS);
  const html = handlebars.compile(compiled.html, BODY_OPTIONS);
  // Handlebars compiles lazily on the first call; do it now, once.
  subject({});
  html({});

  /** Throws RenderLimitError when the variables make the message too large. */
  return (given = {}, builtins = {}) => {
    const context = mergeVariables(builtinVariables(builtins), given);
    const data = { budget: { iterations: RENDER_LIMITS.eachIterations, chars: RENDER_LIMITS.eachOutputChars } };
    const renderedHtml = html(context, { data });
    return {
      subject: sanitizeSubject(subject(context, { data })),
      html: renderedHtml,
      text: htmlToText(renderedHtml),
      missing: variables.filter((name) => isMissing(context, name)),
    };
  };
}

function builtinVariables(builtins: Builtins): Variables {
  const out: Variables = {};
  if (builtins.email !== undefined) out.email = builtins.email;
  if (builtins.metadata !== undefined) out.metadata = builtins.metadata;
  if (builtins.preference_center_url) out.preference_center_url = builtins.preference_center_url;
  if (builtins.unsubscribe_url) out.unsubscribe_url = builtins.unsubscribe_url;
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * The caller's variables over the built-ins, key by key: `{metadata: {coupon}}`
 * from the caller keeps the subscriber's other metadata keys, and any value the
 * caller gives (a string, a list, null) replaces the built-in one.
 */
export function mergeVariables(base: Variables, over: Variables): Variables {
  const out: Variables = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeVariables(current, value) : value;
  }
  return out;
}

/** A variable is missing when its path does not resolve, or resolves to null. */
function isMissing(context: Variables, path: string): boolean {
  let value: unknown = context;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object" || !Object.prototype.hasOwnProperty.call(value, part)) return true;
    value = (value as Record<string, unknown>)[part];
  }
  return value === undefined || value === null;
}

/**
 * A bounded LRU of renderers, so that a version is compiled once per process
 * however many messages use it. Bounded by entries and by the size of the
 * templates held (a compiled 512 KiB MJML template is ≈ 6 MB of HTML). Key it
 * by something immutable: template id and version (`tpl_…:v3`), never by slug.
 */
export class RendererCache {
  private readonly entries = new Map<string, { renderer: Renderer; bytes: number }>();
  private bytes = 0;

  constructor(
    readonly maxEntries = 500,
    /** Sum of subject and HTML lengths (UTF-16 units) kept; default 64 Mi. */
    readonly maxBytes = 64 * 1024 * 1024,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError("maxEntries must be a positive integer");
    if (!(maxBytes > 0)) throw new RangeError("maxBytes must be positive");
  }

  get size(): number {
    return this.entries.size;
  }

  /** The renderer cached under `key`, if any (and marks it most recently used). */
  get(key: string): Renderer | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.renderer;
  }

  /** The renderer for `key`, compiling `compiled` the first time (or after eviction). */
  getOrCompile(key: string, compiled: CompiledContent | (() => CompiledContent)): Renderer {
    const hit = this.get(key);
    if (hit) return hit;
    const content = typeof compiled === "function" ? compiled() : compiled;
    const renderer = compileRenderer(content);
    const bytes = content.subject.length + content.html.length;
    this.entries.set(key, { renderer, bytes });
    this.bytes += bytes;
    // Evict least recently used entries, but never the one just added.
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      if (oldest === key) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
    return renderer;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
