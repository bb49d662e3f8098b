import { envInt, envOptional, envString, type Env } from "@emailsvc/runtime";
import { loadPreferenceLinkSettings, type PreferenceLinkSettings } from "@emailsvc/tokens";

/** The portal's own settings (the common ones and the URLs are the skeleton's). */
export interface PortalConfig {
  /** PORTAL_PORT: the portal page's HTTP port (default 8081). */
  pagePort: number;
  /** PORTAL_HOST: its address (default 127.0.0.1; 0.0.0.0 in a container). */
  pageHost: string;
  /** PREFERENCES_URL and PREFERENCE_TOKEN_TTL_SECONDS: the links the page hands out (a fresh one on request). */
  links: PreferenceLinkSettings;
  /** TOKEN_SIGNING_KEYS as set: verifies preference tokens and signs page sessions (required on MongoDB; see packages/tokens). */
  tokenSigningKeys: string | undefined;
}

export function loadConfig(env: Env = process.env): PortalConfig {
  const pagePort = envInt("PORTAL_PORT", 8081, { min: 0, max: 65535 }, env);
  return {
    pagePort,
    pageHost: envString("PORTAL_HOST", "127.0.0.1", env),
    links: loadPreferenceLinkSettings(env),
    tokenSigningKeys: envOptional("TOKEN_SIGNING_KEYS", env),
  };
}
