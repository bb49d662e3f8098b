export { SandboxProvider } from "./sandbox.js";
export { SmtpProvider, parseSmtpUrl, describeSmtp, classifySmtpError, DEFAULT_SMTP_TIMEOUTS, type SmtpSettings, type SmtpTimeouts } from "./smtp.js";
