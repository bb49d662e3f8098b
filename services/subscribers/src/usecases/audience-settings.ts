import { applySettingsPatch, DEFAULT_AUDIENCE_SETTINGS, type AudienceSettings, type AudienceSettingsPatch } from "../domain/double-opt-in.js";
import type { AudienceSettingsDoc } from "../storage/documents.js";
import type { Deps, Scope } from "./deps.js";

// The account's double opt-in settings: one document per tenant, the
// defaults until the account first changes them.

/** The tenant's settings (the defaults when none are stored). */
export async function getAudienceSettings(scope: Scope): Promise<AudienceSettings> {
  const doc = await scope.audienceSettings.findOne({ _id: scope.audienceSettings.tenant });
  return doc ? settingsOf(doc) : DEFAULT_AUDIENCE_SETTINGS;
}

/** Applies a change and stores the whole result (last writer wins: the settings are one small record edited by hand). */
export async function updateAudienceSettings(deps: Deps, scope: Scope, patch: AudienceSettingsPatch): Promise<AudienceSettings> {
  const next = applySettingsPatch(await getAudienceSettings(scope), patch, deps.minConfirmationExpirySeconds);
  await scope.audienceSettings.upsertMany([
    {
      _id: scope.audienceSettings.tenant,
      double_opt_in: next.doubleOptIn,
      double_opt_in_for_api: next.doubleOptInForApi,
      confirmation_expiry_seconds: next.confirmationExpirySeconds,
      confirmation_template: next.confirmationTemplate,
      updated_at: deps.now(),
    },
  ]);
  return next;
}

function settingsOf(doc: AudienceSettingsDoc): AudienceSettings {
  return {
    doubleOptIn: doc.double_opt_in,
    doubleOptInForApi: doc.double_opt_in_for_api,
    confirmationExpirySeconds: doc.confirmation_expiry_seconds,
    confirmationTemplate: doc.confirmation_template,
  };
}
