import { analyzeTemplate } from "@emailsvc/render";
import type { BodyCompiler } from "./ports.js";
import { invalidMjml, invalidTemplate } from "../domain/template.js";

// The checks and the compile a new version's content goes through, on write.

export interface CompiledBody {
  /** MJML compiled to HTML, placeholders intact. */
  html: string;
  /** Variables the compiled HTML uses. */
  variables: string[];
}

/** Checks the subject's Handlebars (its limits first); returns the variables it uses. */
export function checkSubject(subject: string): string[] {
  const { variables, problems } = analyzeTemplate(subject, { allowTripleStash: true });
  if (problems.length > 0) throw invalidTemplate("subject", problems);
  return variables;
}

/** Checks and compiles a body (in a worker thread), or throws the 400 that names the problems. */
export async function compileBody(compiler: BodyCompiler, mjml: string): Promise<CompiledBody> {
  const result = await compiler.compile(mjml);
  if (result.ok) return { html: result.html, variables: result.variables };
  if (result.kind === "mjml") throw invalidMjml(result.problems);
  if (result.stage === "source") throw invalidTemplate("mjml_content", result.problems);
  // Lines of the compiled HTML mean nothing to the author.
  const problems = result.problems.map((p) => ({ ...p, line: 0 }));
  if (problems.some((p) => p.limit !== undefined)) throw invalidTemplate("mjml_content", problems, "in the HTML MJML made of it");
  throw invalidTemplate(
    "mjml_content",
    problems,
    "in the HTML MJML made of it (keep each {{#if}}/{{#each}} block inside one mj-text, or put its tags in mj-raw)",
  );
}

export function mergeNames(...lists: readonly string[][]): string[] {
  return [...new Set(lists.flat())].sort();
}
