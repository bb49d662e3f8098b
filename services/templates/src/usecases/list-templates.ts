import { pageById } from "@emailsvc/ids";
import type { TemplateView } from "../domain/template.js";
import { templateView, type Page, type Scope } from "./deps.js";

/**
 * Live templates in creation order, `limit` at a time. Items leave out the
 * MJML source (up to 512 KiB each): GetTemplate returns it.
 */
export async function listTemplates(scope: Scope, input: { limit: number; cursor: string }): Promise<Page<TemplateView>> {
  const page = await pageById(input, { idPrefix: "tpl" }, ({ range, options }) => scope.templates.find({ deleted: false, ...range }, options));
  return { items: page.docs.map((d) => ({ ...templateView(d), mjml: "" })), nextCursor: page.nextCursor };
}
