export * from "./limited.js";
export * from "./rerun.js";
export * from "./expiring-cache.js";
