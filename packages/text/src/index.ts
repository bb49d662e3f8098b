export * from "./locales.js";
export * from "./text.js";
