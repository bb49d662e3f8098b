import type { Env } from "@emailsvc/runtime";

/** The campaigns service's own settings (the common ones and the URLs are the skeleton's); none yet. */
export type CampaignsConfig = Record<string, never>;

export function loadConfig(_env: Env = process.env): CampaignsConfig {
  return {};
}
