// The variables a template reads, found in the browser as the member types
// (the API lists a saved template's `variables`, but only its top-level
// names and only once saved), and the sample values a preview is given.
// It follows the Handlebars subset of @emailsvc/render loosely: a name is
// what a preview can fill; anything the service would refuse, it reports on
// save with the line.

const MUSTACHE = /\{\{~?\s*([^{}]*?)\s*~?\}\}/g;
const PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*/;
const BLOCKS = new Set(["if", "unless", "each", "with"]);

/**
 * The dotted paths (`first_name`, `order.total`) the texts read from the
 * message's variables, sorted. Names inside an `{{#each}}` block read the
 * item, not the variables, so only the list itself (and `@root.x`) counts.
 */
export function readVariablePaths(...texts: string[]): string[] {
  const paths = new Set<string>();
  for (const text of texts) {
    let eachDepth = 0;
    for (const match of text.matchAll(MUSTACHE)) {
      let body = (match[1] ?? "").trim();
      if (body.startsWith("!")) continue;
      if (body.startsWith("/")) {
        if (body.slice(1).trim() === "each" && eachDepth > 0) eachDepth--;
        continue;
      }
      let opensEach = false;
      if (body.startsWith("#")) {
        const [helper, ...rest] = body.slice(1).trim().split(/\s+/);
        if (!helper || !BLOCKS.has(helper)) continue;
        opensEach = helper === "each";
        body = rest.join(" ");
      } else if (body === "else" || body.startsWith("else ")) {
        body = body.slice(4).trim().replace(/^if\s+/, "");
      }
      const rooted = body.startsWith("@root.");
      if (rooted) body = body.slice("@root.".length);
      const path = PATH.exec(body)?.[0];
      if (path && path !== "this" && (rooted || eachDepth === 0)) paths.add(path);
      if (opensEach) eachDepth++;
    }
  }
  // A path that is the prefix of another (`order` and `order.total`) is an object: keep the leaves.
  const all = [...paths];
  return all.filter((p) => !all.some((q) => q.startsWith(p + "."))).sort();
}

/** The variables object of a preview or a test send: each filled path, nested by its dots. */
export function sampleVariables(values: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(values)) {
    if (value === "") continue;
    const parts = path.split(".");
    let node = out;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (typeof next !== "object" || next === null) node[part] = {};
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1]!] = value;
  }
  return out;
}

/** "line 3: …" of a problem the service names by its line; the line, or undefined. */
export function lineOf(message: string): number | undefined {
  const found = /(?:^|\s)line (\d+):/.exec(message);
  return found ? Number(found[1]) : undefined;
}
