// @emailsvc/manifest: what each service declares (services.ts) and what
// follows from it (derive.ts). Plain data and pure functions, no dependencies;
// the chart generator is the separate entry `@emailsvc/manifest/chart`.
import { manifestProblems } from "./derive.js";

export * from "./types.js";
export * from "./services.js";
export * from "./derive.js";

// A manifest that contradicts itself stops every process at start, naming the entry.
const problems = manifestProblems();
if (problems.length > 0) throw new Error(`packages/manifest/src/services.ts: ${problems.join("; ")}`);
