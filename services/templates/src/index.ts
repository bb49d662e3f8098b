export { startTemplatesService, type RunningTemplatesService, type TemplatesServiceOptions } from "./server.js";
// MJML validation and compile as done on write (for tools and benchmarks).
export { compileMjml, type MjmlProblem, type MjmlResult } from "./domain/mjml.js";
export { compileTemplateBody, type BodyResult } from "./domain/body.js";
export { BodyCompilerPool, inProcessCompiler, type BodyCompiler, type PoolOptions } from "./compile-pool.js";
export { templatesService } from "./service.js";
