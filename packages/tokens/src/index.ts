// @emailsvc/tokens: signed tokens for links a subscriber follows (one-click
// unsubscribe now, preference links next), with key rotation.
export * from "./keys.js";
export * from "./token.js";
