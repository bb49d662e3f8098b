import Handlebars from "handlebars";
import { handlebarsBounds, htmlBounds, type TemplateProblem } from "./bounds.js";
import { RENDER_LIMITS, type RenderLimit } from "./limits.js";
import { scanMarkup } from "./scan.js";
import { analyzeTemplate } from "./syntax.js";
import { LANGUAGE_DATA, languageOf, languageSlot, languageUndetermined, withLanguage } from "./language.js";
import { compileTextTemplate, contextOf, htmlToText } from "./text.js";
import { guardUrlAttributes, URL_GUARD_HELPER, urlGuard } from "./urls.js";

// Per-message rendering of a compiled template version: Handlebars fills the
// {{variables}} of the subject and of the HTML (which MJML compiled once, on
// write), and a plain-text part is derived from the rendered HTML.
//
// Pure (no I/O) and cheap to import (no MJML). Compile a version once with
// compileRenderer() (or through a RendererCache) and call the renderer per
// message. The contract, errors included, is in this package's README.

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
  /** A pending subscriber's double opt-in confirmation link (the confirmation mail's button). */
  confirmation_url?: string;
}

/** What a message needs besides its variables; none of it is a template variable. */
export interface MessageOptions {
  /**
   * The recipient's language (a subscriber's `locale`): the `lang` of the
   * message's <html> when its template declares none (see language.ts).
   */
  language?: string | undefined;
}

export interface RenderedMessage {
  /** One line: CR, LF and other control characters become spaces. */
  subject: string;
  html: string;
  /**
   * `html` as the version's fixed text and this message's values, when the
   * version's body has no blocks (see HtmlParts): a MIME writer encodes the
   * fixed text once per version and only the values per message.
   */
  htmlParts?: HtmlParts | undefined;
  /** Plain-text part derived from `html`. */
  text: string;
  /** Variables the template uses that were neither given nor built in (rendered empty), sorted. */
  missing: string[];
}

/**
 * A rendered body as its pieces: `html` is `statics[0] + values[0] +
 * statics[1] + … + statics[n]`. `statics` is the same array (the same strings)
 * for every message of a template version; `values` are this message's, each
 * what one `{{x}}` wrote (HTML-escaped) or what one URL guard let through
 * (urls.ts). Given only when the body is text and such values alone (no
 * `{{#if}}` or `{{#each}}`), checked when the version is compiled and again
 * for each message (their lengths add up to the HTML's).
 */
export interface HtmlParts {
  readonly statics: readonly string[];
  readonly values: readonly string[];
}

/** Renders one message. Throws RenderLimitError when these variables make it exceed RENDER_LIMITS. */
export interface Renderer {
  (variables?: Variables, builtins?: Builtins, options?: MessageOptions): RenderedMessage;
  /**
   * The top-level variables the version reads (sorted; paths such as
   * `metadata.name` as written): a caller may skip computing a built-in no
   * message of the version shows, such as a signed link.
   */
  readonly variables: readonly string[];
}

/** Whether a version reading `variables` shows `name` (or something inside it). */
export function readsVariable(variables: readonly string[], name: string): boolean {
  return variables.some((v) => v === name || v.startsWith(`${name}.`));
}

/** Compiles a version once. Throws TemplateRejectedError when the content cannot be rendered at all. */
export type CompileRenderer = (compiled: CompiledContent) => Renderer;

/**
 * This version cannot be rendered, whatever the variables: it exceeds
 * TEMPLATE_LIMITS (stored before they existed) or does not compile. A property
 * of the content alone, so a caller may remember it per version. The message
 * names the part, the line and the limit; it holds no variable values.
 */
export class TemplateRejectedError extends Error {
  constructor(readonly problems: ReadonlyArray<TemplateProblem & { part: "subject" | "html" }>) {
    super(`the template cannot be rendered: ${problems.map((p) => `${p.part}${p.line > 0 ? ` line ${p.line}` : ""}: ${p.message}`).join("; ")}`);
    this.name = "TemplateRejectedError";
  }

  /** Whether a limit (rather than a syntax error) is the reason. */
  get overLimits(): boolean {
    return this.problems.some((p) => p.limit !== undefined);
  }
}

const LIMIT_TEXT: Record<RenderLimit, string> = {
  eachIterations: `more than ${RENDER_LIMITS.eachIterations.toLocaleString("en-US")} {{#each}} iterations in one message`,
  evaluations: `more than ${RENDER_LIMITS.evaluations.toLocaleString("en-US")} evaluations of {{…}} expressions and blocks in one message`,
  outputChars: `more than ${RENDER_LIMITS.outputChars.toLocaleString("en-US")} characters of subject and HTML in one message`,
  markupDepth: `HTML elements nested more than ${RENDER_LIMITS.markupDepth} deep in the rendered message`,
};

/** These variables would make this message exceed RENDER_LIMITS: a property of the message, not of the version. */
export class RenderLimitError extends Error {
  constructor(readonly limit: RenderLimit) {
    super(LIMIT_TEXT[limit]);
    this.name = "RenderLimitError";
  }
}

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
/** The body's helpers: those of templates, and the guard of URL attribute values (urls.ts), which only we write. */
const BODY_HELPERS = { ...HELPERS, [URL_GUARD_HELPER]: true };

/**
 * What the message being rendered has left and spent. Rendering is synchronous,
 * so the one being rendered is `current`; `weights` are those of the template
 * (subject or HTML) running now. `frames` holds, per `{{#each}}` running now
 * (outermost first), the characters its finished iterations produced, plus
 * those of each blocks finished inside its current iteration; `done` what
 * finished outermost each blocks produced. Their sum is what each blocks have
 * produced so far, every character counted once however deep the nesting.
 */
interface Budget {
  iterations: number;
  evaluations: number;
  weights: BlockWeights;
  /** Characters written by `{{x}}` in the body (escaped). */
  escaped: number;
  done: number;
  frames: number[];
  /** What each `{{x}}` and URL guard of the body wrote, in order, when the message's HtmlParts are taken (see compileParts). */
  values?: string[] | undefined;
}

let current: Budget | undefined;

/**
 * While a version's fixed text is found (compileParts): every value written
 * is a marker of its own instead, counted here.
 */
let marking: { next: number } | undefined;
const MARK_START = "\uE000";
const MARK_END = "\uE001";
const MARK = /\uE000\d+\uE001/g;

/**
 * What running a block's content once costs: one, plus the expressions
 * directly in it (those of blocks inside count when they run), keyed by the
 * block's position, which Handlebars passes to helpers as `options.loc`.
 */
interface BlockWeights {
  byLocation: Map<string, number>;
  /** For a block not found (never expected): the heaviest. */
  max: number;
}

const locationKey = (loc: hbs.AST.SourceLocation | undefined) => (loc ? `${loc.start.line}:${loc.start.column}` : "");

/** The weight of every block of `ast` (walked without recursion). */
function blockWeights(ast: hbs.AST.Program): BlockWeights {
  const byLocation = new Map<string, number>();
  let max = 1;
  const programs: Array<hbs.AST.Program | undefined> = [ast];
  const mustaches = (program: hbs.AST.Program | undefined) => program?.body.filter((n) => n.type === "MustacheStatement").length ?? 0;
  while (programs.length > 0) {
    const program = programs.pop();
    if (!program) continue;
    for (const node of program.body) {
      if (node.type !== "BlockStatement") continue;
      const block = node as hbs.AST.BlockStatement;
      const weight = 1 + Math.max(mustaches(block.program), mustaches(block.inverse));
      byLocation.set(locationKey(block.loc), weight);
      max = Math.max(max, weight);
      programs.push(block.program, block.inverse);
    }
  }
  return { byLocation, max };
}

/** Spends the evaluations of running the block at `loc` once. */
function spend(budget: Budget, loc: hbs.AST.SourceLocation | undefined): void {
  budget.evaluations -= budget.weights.byLocation.get(locationKey(loc)) ?? budget.weights.max;
  if (budget.evaluations < 0) throw new RenderLimitError("evaluations");
}

const eachChars = (budget: Budget) => budget.frames.reduce((sum, chars) => sum + chars, budget.done);

// Every `{{x}}` of a body goes through escapeExpression, which Handlebars'
// runtime copies into each compiled template when it is set up. Ours counts
// what it writes, so that a thousand `{{x}}` of a 64 KiB variable stop at the
// output budget rather than after escaping 64 MB. It is swapped in only while
// this environment sets up a template (synchronously), so no other Handlebars
// user in the process sees it.
interface HandlebarsInternals {
  Utils: { escapeExpression(value: unknown): string };
  VM: { template(spec: unknown, env: unknown): HandlebarsTemplateDelegate };
}
const internals = handlebars as unknown as HandlebarsInternals;
const baseEscape = internals.Utils.escapeExpression;
function countedEscape(value: unknown): string {
  if (marking) return `${MARK_START}${marking.next++}${MARK_END}`;
  const out = baseEscape(value);
  const budget = current;
  if (budget) {
    budget.escaped += out.length;
    if (budget.escaped > RENDER_LIMITS.outputChars) throw new RenderLimitError("outputChars");
    budget.values?.push(out);
  }
  return out;
}
handlebars.template = (spec: TemplateSpecification) => {
  internals.Utils.escapeExpression = countedEscape;
  try {
    return setUpOnce(internals.VM.template(spec, handlebars));
  } finally {
    internals.Utils.escapeExpression = baseEscape;
  }
};

/** A template's set-up step, which Handlebars' runtime runs at the start of every call. */
interface TemplateSetup {
  _setup(options: Record<string, unknown>): void;
}

/**
 * Handlebars sets a template up again on every call: a copy of the
 * environment's helpers, each wrapped in a closure, and a new policy of
 * prototype access (about 4 KB of garbage a message, its three parts
 * together). What it builds depends only on the environment's helpers (this
 * module registers them once, at load) and on the call's options; calls with
 * no options but `data` (ours) share the set-up of the first such call. A
 * call with any other option (a partial's, a caller's helpers) is set up as
 * Handlebars does it.
 */
function setUpOnce(template: HandlebarsTemplateDelegate): HandlebarsTemplateDelegate {
  const target = template as unknown as TemplateSetup;
  const setup = target._setup.bind(template);
  let shared = false;
  target._setup = (options) => {
    if (!onlyData(options)) {
      // Whatever this call set up is its own: the next plain call sets up again.
      shared = false;
      setup(options);
    } else if (!shared) {
      setup(options);
      shared = true;
    }
  };
  return template;
}

function onlyData(options: Record<string, unknown>): boolean {
  for (const key in options) if (key !== "data") return false;
  return true;
}

// if and unless as built in, each run counted.
for (const name of ["if", "unless"] as const) {
  const builtin = handlebars.helpers[name] as (this: unknown, context: unknown, options: Handlebars.HelperOptions) => unknown;
  handlebars.registerHelper(name, function (this: unknown, context: unknown, options: Handlebars.HelperOptions) {
    if (current) spend(current, (options as { loc?: hbs.AST.SourceLocation }).loc);
    return builtin.call(this, context, options);
  });
}

// each as built in, with every iteration counted, and what iterations produce,
// so that nested each blocks over the caller's lists stop at the limit instead
// of building gigabytes first (three levels over 1,000 items are 10⁹ iterations).
const builtinEach = handlebars.helpers.each as (this: unknown, context: unknown, options: Handlebars.HelperOptions) => string;
handlebars.registerHelper("each", function (this: unknown, context: unknown, options: Handlebars.HelperOptions) {
  const budget = current;
  if (!budget) return builtinEach.call(this, context, options);
  const loc = (options as { loc?: hbs.AST.SourceLocation }).loc;
  spend(budget, loc);
  const fn = options.fn;
  const frame = budget.frames.length;
  budget.frames.push(0);
  const counted = Object.assign((item: unknown, opts?: Handlebars.RuntimeOptions) => {
    if (--budget.iterations < 0) throw new RenderLimitError("eachIterations");
    spend(budget, loc);
    const before = budget.frames[frame]!;
    const out = fn(item, opts);
    // `out` includes what each blocks inside this iteration produced (merged into this frame meanwhile).
    budget.frames[frame] = before + out.length;
    if (eachChars(budget) > RENDER_LIMITS.outputChars) throw new RenderLimitError("outputChars");
    return out;
  }, fn);
  const out = builtinEach.call(this, context, { ...options, fn: counted });
  const chars = budget.frames.pop()!;
  if (budget.frames.length > 0) budget.frames[budget.frames.length - 1]! += chars;
  else budget.done += chars;
  return out;
});

// The guard of a URL attribute value: renders it and lets it through only if
// it is a safe URL. Its output is what the escaped value was, or a constant.
// What it writes is one value of the message's HtmlParts (the values written
// inside it are not).
handlebars.registerHelper(URL_GUARD_HELPER, function (this: unknown, replacement: unknown, attribute: unknown, options: Handlebars.HelperOptions) {
  const values = current?.values;
  const before = values?.length ?? 0;
  const out = urlGuard(options.fn(this), String(replacement), attribute === "srcset" || attribute === "script" ? attribute : "url");
  if (marking) return `${MARK_START}${marking.next++}${MARK_END}`;
  if (values) {
    values.length = before;
    values.push(out);
  }
  return out;
});

const BODY_OPTIONS: CompileOptions = { knownHelpersOnly: true, knownHelpers: BODY_HELPERS, strict: false, noEscape: false };
const SUBJECT_OPTIONS: CompileOptions = { knownHelpersOnly: true, knownHelpers: HELPERS, strict: false, noEscape: true };

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]+/g;

/** Makes a rendered subject one header-safe line (no CR/LF: no header injection). */
export function sanitizeSubject(subject: string): string {
  return subject.replace(CONTROL, " ").replace(/ {2,}/g, " ").trim();
}

/**
 * Compiles a version: checks subject and HTML against TEMPLATE_LIMITS (by
 * iterative scans, before Handlebars parses anything), compiles both with
 * Handlebars, and returns the renderer of its messages.
 *
 * @throws TemplateRejectedError when the content is beyond the limits or does not compile.
 */
export function compileRenderer(compiled: CompiledContent): Renderer {
  const problems = [
    ...handlebarsBounds(compiled.subject).map((p) => ({ ...p, part: "subject" as const })),
    ...[...htmlBounds(compiled.html), ...handlebarsBounds(compiled.html)].map((p) => ({ ...p, part: "html" as const })),
  ];
  if (problems.length > 0) throw new TemplateRejectedError(problems);

  let variables: readonly string[];
  let subject: HandlebarsTemplateDelegate;
  let html: HandlebarsTemplateDelegate;
  let subjectWeights: BlockWeights;
  let htmlWeights: BlockWeights;
  let text: ReturnType<typeof compileTextTemplate>;
  let staticMarkup: boolean;
  // URL attribute values holding placeholders are checked per message (urls.ts).
  const guarded = guardUrlAttributes(compiled.html);
  if (guarded.problems.length > 0) throw new TemplateRejectedError(guarded.problems.map((p) => ({ ...p, part: "html" as const })));
  const needsLanguage = languageUndetermined(compiled.html);
  // The usual case (MJML's output): the language goes in as the HTML is rendered.
  const slotted = needsLanguage ? languageSlot(guarded.html) : undefined;
  try {
    variables =
      compiled.variables ??
      [
        ...new Set([
          ...analyzeTemplate(compiled.subject, { allowTripleStash: true }).variables,
          ...analyzeTemplate(compiled.html, { allowTripleStash: false }).variables,
        ]),
      ].sort();
    // Parsed once, for the block weights and the compile.
    const subjectAst = Handlebars.parseWithoutProcessing(compiled.subject);
    const htmlAst = Handlebars.parseWithoutProcessing(slotted ?? guarded.html);
    subjectWeights = blockWeights(subjectAst);
    htmlWeights = blockWeights(htmlAst);
    // HTML of text and {{x}} alone (no blocks): values are HTML-escaped, so no
    // message can nest its elements deeper than the version itself, which
    // htmlBounds checked above; the per-message scan is then skipped.
    // A guarded value is such HTML too: the guard writes it as it was, or a constant.
    staticMarkup = htmlAst.body.every((node) => isStaticNode(node) || (isGuard(node) && (node as hbs.AST.BlockStatement).program.body.every(isStaticNode)));
    subject = handlebars.compile(subjectAst, SUBJECT_OPTIONS);
    html = handlebars.compile(htmlAst, BODY_OPTIONS);
    // Handlebars compiles lazily on the first call; do it now, once.
    subject({});
    html({});
    text = compileTextTemplate(compiled.html, (context) => html(context));
  } catch (err) {
    // Content that passed the checks on write compiles; what does not is
    // rejected for good (the reason is Handlebars' first line, about the template).
    const message = (err instanceof Error ? err.message : String(err)).split("\n")[0]!.slice(0, 200);
    throw new TemplateRejectedError([{ part: "html", line: 0, message: `does not compile: ${message}` }]);
  }

  // The body as fixed text and values, when it is text and values alone and
  // renders as such (not when the language is put in after the render).
  const statics = staticMarkup && !(needsLanguage && slotted === undefined) ? compileParts(html, variables, slotted !== undefined) : undefined;
  const staticChars = statics?.reduce((sum, piece) => sum + piece.length, 0) ?? 0;
  // Split once: every message checks every path.
  const variablePaths = variables.map((name) => name.split("."));
  const renderer = (given: Variables = {}, builtins: Builtins = {}, options: MessageOptions = {}): RenderedMessage => {
    const context = mergeVariables(builtinVariables(builtins), given);
    let renderedHtml: string;
    let rawSubject: string;
    const budget = newBudget(htmlWeights);
    const written: string[] | undefined = statics ? [] : undefined;
    budget.values = written;
    current = budget;
    try {
      renderedHtml = slotted === undefined ? html(context) : html(context, { data: { root: context, [LANGUAGE_DATA]: languageOf(options.language) } });
      budget.weights = subjectWeights;
      budget.values = undefined;
      rawSubject = subject(context);
    } finally {
      current = undefined;
    }
    // Checked before anything reads the text: its length is known without flattening it.
    if (renderedHtml.length + rawSubject.length > RENDER_LIMITS.outputChars) throw new RenderLimitError("outputChars");
    const renderedSubject = sanitizeSubject(rawSubject);
    const values = statics ? valuesOf(statics, staticChars, written!, renderedHtml.length) : undefined;
    if (!staticMarkup && scanMarkup(renderedHtml).depth.value > RENDER_LIMITS.markupDepth) throw new RenderLimitError("markupDepth");
    return {
      subject: renderedSubject,
      html: needsLanguage && slotted === undefined ? withLanguage(renderedHtml, languageOf(options.language)) : renderedHtml,
      htmlParts: values ? { statics: statics!, values } : undefined,
      // The text part compiled with the version when it could be; else derived from this message's HTML.
      text: text ? text(context) : htmlToText(renderedHtml),
      missing: missingOf(context, variables, variablePaths),
    };
  };
  return Object.assign(renderer, { variables });
}

function newBudget(weights: BlockWeights): Budget {
  return { iterations: RENDER_LIMITS.eachIterations, evaluations: RENDER_LIMITS.evaluations, weights, escaped: 0, done: 0, frames: [] };
}

/** Values that check a version's HtmlParts: short, empty, every character Handlebars escapes, a line break, a URL (through a guard as it is). */
const PART_PROBES = ["Ab", "", "a&b<c>\"d'e`f=g", "two\nlines", "https://example.com/a?b=1&c=2"];

/**
 * The fixed text of a version's body, which has no blocks but URL guards:
 * rendered once with every value a marker, and split at them. Kept only
 * when, rendered with each of PART_PROBES for every variable, the pieces
 * and the values recorded make exactly the HTML Handlebars wrote. Undefined
 * otherwise (the body's own text holds a marker's character, say).
 */
function compileParts(html: HandlebarsTemplateDelegate, variables: readonly string[], languageData: boolean): readonly string[] | undefined {
  const render = (context: Record<string, unknown>, budget: Budget): string => {
    current = budget;
    try {
      return languageData ? html(context, { data: { root: context, [LANGUAGE_DATA]: "en" } }) : html(context);
    } finally {
      current = undefined;
    }
  };
  let marked: string;
  marking = { next: 0 };
  try {
    marked = render({}, newBudget(EMPTY_WEIGHTS));
  } catch {
    return undefined;
  } finally {
    marking = undefined;
  }
  const statics = marked.split(MARK);
  if (statics.some((piece) => piece.includes(MARK_START) || piece.includes(MARK_END))) return undefined;
  const staticChars = statics.reduce((sum, piece) => sum + piece.length, 0);
  for (const probe of PART_PROBES) {
    const context = contextOf(variables, probe);
    if (context === undefined) return undefined;
    const budget = newBudget(EMPTY_WEIGHTS);
    const written: string[] = [];
    budget.values = written;
    let out: string;
    try {
      out = render(context, budget);
    } catch {
      return undefined;
    }
    const values = valuesOf(statics, staticChars, written, out.length);
    if (!values || joinParts(statics, values) !== out) return undefined;
  }
  return statics;
}

const EMPTY_WEIGHTS: BlockWeights = { byLocation: new Map(), max: 1 };

/** The values recorded, when they are as many as the gaps between the fixed pieces and fill exactly the rest of the HTML. */
function valuesOf(statics: readonly string[], staticChars: number, values: string[], htmlLength: number): string[] | undefined {
  if (values.length !== statics.length - 1) return undefined;
  let chars = staticChars;
  for (const value of values) chars += value.length;
  return chars === htmlLength ? values : undefined;
}

/** statics[0] + values[0] + statics[1] + … (for the checks: a writer of the parts never needs the whole string). */
export function joinParts(statics: readonly string[], values: readonly string[]): string {
  let out = statics[0] ?? "";
  for (let i = 0; i < values.length; i += 1) out += values[i]! + statics[i + 1]!;
  return out;
}

const isStaticNode = (node: hbs.AST.Node) => node.type === "ContentStatement" || node.type === "MustacheStatement" || node.type === "CommentStatement";
const isGuard = (node: hbs.AST.Node) =>
  node.type === "BlockStatement" && (node as hbs.AST.BlockStatement).path.type === "PathExpression" && ((node as hbs.AST.BlockStatement).path as hbs.AST.PathExpression).original === URL_GUARD_HELPER;

function builtinVariables(builtins: Builtins): Variables {
  const out: Variables = {};
  if (builtins.email !== undefined) out.email = builtins.email;
  if (builtins.metadata !== undefined) out.metadata = builtins.metadata;
  if (builtins.preference_center_url) out.preference_center_url = builtins.preference_center_url;
  if (builtins.unsubscribe_url) out.unsubscribe_url = builtins.unsubscribe_url;
  if (builtins.confirmation_url) out.confirmation_url = builtins.confirmation_url;
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

/** The variables (`names`, split into `paths`) that `context` lacks. */
function missingOf(context: Variables, names: readonly string[], paths: readonly (readonly string[])[]): string[] {
  const missing: string[] = [];
  for (let i = 0; i < names.length; i += 1) if (isMissing(context, paths[i]!)) missing.push(names[i]!);
  return missing;
}

/** A variable is missing when its path does not resolve, or resolves to null. */
function isMissing(context: Variables, path: readonly string[]): boolean {
  let value: unknown = context;
  for (const part of path) {
    if (value === null || typeof value !== "object" || !Object.prototype.hasOwnProperty.call(value, part)) return true;
    value = (value as Record<string, unknown>)[part];
  }
  return value === undefined || value === null;
}
