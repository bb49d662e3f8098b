import type { Builtins, CompileRenderer, Rendered } from "../../src/domain/renderer.js";

// A MINIMAL STAND-IN for `compileRenderer` of @emailsvc/templates, for these
// tests only (the service is given the real one by its wiring). It does the
// little the tests rely on: `{{name}}` / `{{a.b}}` filled and HTML-escaped as
// Handlebars escapes, `{{{name}}}` raw, a subject without line breaks, and a
// text part made by stripping tags.

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;", "`": "&#x60;", "=": "&#x3D;" };
const escape = (s: string) => s.replace(/[&<>"'`=]/g, (c) => ESCAPES[c]!);

function lookup(scope: Record<string, unknown>, path: string): unknown {
  let value: unknown = scope;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function fill(source: string, scope: Record<string, unknown>, missing: Set<string>, escaped: boolean): string {
  return source.replace(/\{\{\{\s*([\w.]+)\s*\}\}\}|\{\{\s*([\w.]+)\s*\}\}/g, (_m, raw: string | undefined, esc: string | undefined) => {
    const name = (raw ?? esc)!;
    const value = lookup(scope, name);
    if (value === undefined || value === null) {
      missing.add(name);
      return "";
    }
    const text = String(value);
    return raw !== undefined || !escaped ? text : escape(text);
  });
}

const decode = (s: string) =>
  s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#x27;/g, "'").replace(/&#x60;/g, "`").replace(/&#x3D;/g, "=").replace(/&amp;/g, "&");

export const standInRenderer: CompileRenderer = (compiled) => (variables, builtins?: Builtins): Rendered => {
  const scope = { ...(builtins ?? {}), ...variables } as Record<string, unknown>;
  const missing = new Set<string>();
  const subject = fill(compiled.subject, scope, missing, false).replace(/[\r\n]+/g, " ");
  const html = fill(compiled.html, scope, missing, true);
  const text = decode(html.replace(/<(style|head)[^>]*>[\s\S]*?<\/\1>/gi, "").replace(/<br\s*\/?>|<\/p>/gi, "\n").replace(/<[^>]+>/g, ""))
    .replace(/[ \t]+/g, " ")
    .replace(/\n\s*\n+/g, "\n\n")
    .trim();
  return { subject, html, text, missing: [...missing].sort() };
};
