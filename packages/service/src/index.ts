// @emailsvc/service: the service skeleton. See src/module.ts and src/run.ts.
export * from "./module.js";
export * from "./run.js";
export { exitOnSignal } from "./shutdown.js";
