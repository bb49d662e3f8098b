export { SandboxProvider } from "./sandbox.js";
export { SmtpProvider, parseSmtpUrl, describeSmtp, classifySmtpError, DEFAULT_SMTP_TIMEOUTS, type SmtpSettings, type SmtpTimeouts } from "./smtp.js";
export { PROVIDERS, Providers, configureProvider, loadProviders, type ConfiguredProvider, type ProviderSetup } from "./registry.js";
export { defineProvider, type ProviderContext, type ProviderDefinition } from "./definition.js";
