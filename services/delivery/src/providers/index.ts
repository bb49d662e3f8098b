export { SandboxProvider } from "./sandbox.js";
export { SmtpProvider, parseSmtpUrl, describeSmtp, classifySmtpError, DEFAULT_SMTP_TIMEOUTS, type SmtpSettings, type SmtpTimeouts } from "./smtp.js";
export { PROVIDERS, Providers, configureProvider, loadProviders, type ConfiguredProvider, type ProviderSetup } from "./registry.js";
export { defineProvider, type ProviderContext, type ProviderDefinition } from "./definition.js";
export { SesProvider, parseSesSettings, describeSes, classifySesError, DEFAULT_SES_TIMEOUTS, type SesSettings, type SesTimeouts } from "./ses.js";
export { buildRawMessage } from "./mime.js";
