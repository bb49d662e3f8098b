export * from "./config.js";
export * from "./catalog.js";
export * from "./listen.js";
export * from "./heap.js";
