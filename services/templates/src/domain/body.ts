import { compileMjml, type MjmlProblem } from "./mjml.js";
import { analyzeTemplate, type SyntaxProblem } from "./template-syntax.js";

// Everything a new body goes through on write, as one pure function so that it
// can run in a worker thread (a 512 KiB template takes seconds of CPU):
// the Handlebars check on the source (lines are the author's), MJML's checks
// and compile, then the Handlebars check of the compiled HTML (MJML drops text
// it does not render, which can split a {{#each}} block).

export type BodyResult =
  | { ok: true; html: string; variables: string[] }
  | { ok: false; kind: "mjml"; problems: MjmlProblem[] }
  | { ok: false; kind: "template"; stage: "source" | "compiled"; problems: SyntaxProblem[] };

export async function compileTemplateBody(mjml: string): Promise<BodyResult> {
  const source = analyzeTemplate(mjml, { allowTripleStash: false });
  if (source.problems.length > 0) return { ok: false, kind: "template", stage: "source", problems: source.problems };
  const result = await compileMjml(mjml);
  if (!result.ok) return { ok: false, kind: "mjml", problems: result.problems };
  const compiled = analyzeTemplate(result.html, { allowTripleStash: false });
  if (compiled.problems.length > 0) return { ok: false, kind: "template", stage: "compiled", problems: compiled.problems };
  return { ok: true, html: result.html, variables: compiled.variables };
}
