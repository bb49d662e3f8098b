import type { TemplateView } from "../domain/template.js";
import { loadTemplate, templateView, type Scope } from "./deps.js";

/** One live template of the tenant, with its MJML, or 404. */
export async function getTemplate(scope: Scope, id: string): Promise<TemplateView> {
  return templateView(await loadTemplate(scope, id));
}
