// Sample values for a template's variables, as the editor's preview and test
// send give them. The API names the variables a template reads as dotted
// paths (`first_name`, `order.total`); the member fills each with text.

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

/** The line a problem names ("line 3: …", as the templates service words them), or undefined. */
export function lineOf(message: string): number | undefined {
  const found = /(?:^|\s)line (\d+):/.exec(message);
  return found ? Number(found[1]) : undefined;
}
