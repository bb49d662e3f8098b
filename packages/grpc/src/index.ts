export * from "./server.js";
export * from "./transport.js";
export * from "./headers.js";
export * from "./health.js";
export * from "./service-server.js";
export * from "./platform-mail.js";
