import type { CompileRenderer } from "./domain/renderer.js";

// INTERIM SEAM. The real renderer is `compileRenderer` of @emailsvc/templates,
// which is being written in parallel; until delivery can depend on it (package
// dependency + tsconfig reference), it is looked up at start-up by name. Once
// it exists, replace this file with:
//   import { compileRenderer } from "@emailsvc/templates/render";
// (the renderer alone, without MJML) and pass it as the default in server.ts.

const PACKAGE = "@emailsvc/templates/render";

/** The renderer of @emailsvc/templates, or a clear start-up error when it is not there. */
export function loadTemplatesRenderer(): CompileRenderer {
  let mod: { compileRenderer?: unknown };
  try {
    // A computed name: no compile-time dependency on a package that may not be built yet.
    mod = require(PACKAGE) as { compileRenderer?: unknown };
  } catch (err) {
    throw new Error(`delivery needs a renderer: ${PACKAGE} could not be loaded (${err instanceof Error ? err.message : String(err)})`);
  }
  if (typeof mod.compileRenderer !== "function") {
    throw new Error(`delivery needs a renderer: ${PACKAGE} exports no compileRenderer function`);
  }
  return mod.compileRenderer as CompileRenderer;
}
