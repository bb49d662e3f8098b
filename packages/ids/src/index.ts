export * from "./ids.js";
export * from "./cursor.js";
