// @emailsvc/tokens: signed tokens for links a subscriber follows (one-click
// unsubscribe, preference links), with key rotation.
export * from "./keys.js";
export * from "./token.js";
export * from "./preference-link.js";
export * from "./preference-host.js";
export * from "./mail-links.js";
export * from "./sealed.js";
