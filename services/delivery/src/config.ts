import { ConfigError, envOptional, envString, loadServiceEnv, type ServiceEnv } from "@emailsvc/runtime";
import type { ProviderName } from "./domain/email.js";
import { DEFAULT_FROM, parseSender, type Sender } from "./domain/message.js";
import { parseSmtpUrl, type SmtpSettings } from "./providers/smtp.js";

export interface DeliveryConfig extends ServiceEnv {
  templatesUrl: string;
  /** SUBSCRIBERS_URL: optional; gives templates the recipient's `metadata.*`. */
  subscribersUrl: string | undefined;
  provider: ProviderName;
  smtp: SmtpSettings | undefined;
  from: Sender;
}

/** Reads the environment once; a bad value stops the start with a message naming the variable. */
export function loadConfig(): DeliveryConfig {
  const provider = envString("EMAIL_PROVIDER", "sandbox");
  if (provider !== "sandbox" && provider !== "smtp") throw new ConfigError(`EMAIL_PROVIDER must be sandbox or smtp, got "${provider}"`);
  const smtpUrl = envOptional("SMTP_URL");
  if (provider === "smtp" && !smtpUrl) throw new ConfigError("EMAIL_PROVIDER=smtp needs SMTP_URL (smtp://user:pass@host:587)");
  let smtp: SmtpSettings | undefined;
  try {
    smtp = smtpUrl ? parseSmtpUrl(smtpUrl) : undefined;
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  let from: Sender;
  try {
    from = parseSender(envString("EMAIL_FROM", DEFAULT_FROM));
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  return {
    ...loadServiceEnv("delivery", 50053),
    templatesUrl: envString("TEMPLATES_URL", "http://127.0.0.1:50052"),
    subscribersUrl: envOptional("SUBSCRIBERS_URL"),
    provider,
    smtp,
    from,
  };
}
