import { analyzeTemplate, guardUrlAttributes, htmlBounds, markupBounds, type TemplateProblem } from "@emailsvc/render";
import { compileMjml, type MjmlProblem } from "./mjml.js";

// Everything a new body goes through on write, as one pure function so that it
// can run in a worker thread (a 512 KiB template takes seconds of CPU):
// the Handlebars check on the source (lines are the author's), the nesting of
// its markup, MJML's checks and compile, then the checks of the compiled HTML
// as delivery will render it: its size and nesting, its Handlebars (MJML
// drops text it does not render, which can split a {{#each}} block), and its
// URL attributes (a block inside one must close in it: @emailsvc/render checks
// such a value whole, per message). Every
// limit is checked by an iterative scan before anything recursive (Handlebars'
// parser, MJML's validator) sees the text: TEMPLATE_LIMITS of @emailsvc/render.

export type BodyResult =
  | { ok: true; html: string; variables: string[] }
  | { ok: false; kind: "mjml"; problems: MjmlProblem[] }
  | { ok: false; kind: "template"; stage: "source" | "compiled"; problems: TemplateProblem[] };

export async function compileTemplateBody(mjml: string): Promise<BodyResult> {
  const source = analyzeTemplate(mjml, { allowTripleStash: false });
  if (source.problems.length > 0) return { ok: false, kind: "template", stage: "source", problems: source.problems };
  // MJML is read as XML (`<mj-image/>` closes itself); its validator recurses on the nesting.
  const markup = markupBounds(mjml, true);
  if (markup.length > 0) return { ok: false, kind: "template", stage: "source", problems: markup };
  // With the author's lines where the source shows it; the compiled HTML is checked again below.
  const sourceUrls = guardUrlAttributes(mjml).problems;
  if (sourceUrls.length > 0) return { ok: false, kind: "template", stage: "source", problems: sourceUrls };
  const result = await compileMjml(mjml);
  if (!result.ok) return { ok: false, kind: "mjml", problems: result.problems };
  const bounds = htmlBounds(result.html);
  if (bounds.length > 0) return { ok: false, kind: "template", stage: "compiled", problems: bounds };
  const compiled = analyzeTemplate(result.html, { allowTripleStash: false });
  if (compiled.problems.length > 0) return { ok: false, kind: "template", stage: "compiled", problems: compiled.problems };
  // A URL attribute's value is checked whole per message; a block may not leave it half open.
  const urls = guardUrlAttributes(result.html).problems;
  if (urls.length > 0) return { ok: false, kind: "template", stage: "compiled", problems: urls };
  return { ok: true, html: result.html, variables: compiled.variables };
}
