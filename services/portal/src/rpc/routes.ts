import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { portal } from "@emailsvc/proto";
import { invalid } from "@emailsvc/errors";
import { isId } from "@emailsvc/ids";
import { readCallContext } from "@emailsvc/tenancy";
import {
  eraseAccount,
  getPreferences,
  setLocale,
  subscribeTag,
  unsubscribeAll,
  unsubscribeTag,
  type PortalCall,
  type PortalDeps,
  type PreferencesView,
} from "../usecases/preferences.js";
import { exportData, type ExportDeps } from "../usecases/export.js";
import { getPortalSettings, updatePortalSettings, type PortalSettingsView, type SettingsDeps } from "../usecases/settings.js";
import {
  deleteCustomDomain,
  getCustomDomain,
  resolveCustomDomain,
  setCustomDomain,
  type CustomDomainDeps,
  type CustomDomainView,
} from "../usecases/custom-domains.js";
import type { FormDeps } from "../usecases/forms.js";
import { createForm } from "../usecases/create-form.js";
import { getForm } from "../usecases/get-form.js";
import { listForms } from "../usecases/list-forms.js";
import { FORM_SETTING_PATHS, updateForm } from "../usecases/update-form.js";
import { deleteForm } from "../usecases/delete-form.js";
import type { FormFieldType, FormSettings, SignupFormView } from "../domain/signup-form.js";
import { formActionUrl, formSnippet } from "../page/form-snippet.js";


function preferencesToProto(view: PreferencesView): portal.Preferences {
  return create(portal.PreferencesSchema, {
    subscriberId: view.subscriberId,
    email: view.email,
    status: view.status,
    locale: view.locale,
    subscribedTags: view.subscribedTags,
    availableTags: view.availableTags,
    mailability: view.mailability,
  });
}

function checkedId(value: string, prefix: string, field: string): string {
  if (!isId(prefix, value)) throw invalid(`${field} is not a valid id`, [{ field, description: "not a valid id" }]);
  return value;
}

/**
 * Registers PreferenceCenterService: proto in, use case, proto out. The actor
 * of every change is `portal`. The RateLimit headers of the subscriber's
 * budgets go into the answer's metadata (a refusal carries them with its error).
 */
export function preferenceCenterRoutes(deps: PortalDeps, exportDeps: ExportDeps): (router: ConnectRouter) => void {
  return (router) => {
    const portalCall = (
      subscriberId: string,
      ctx: HandlerContext,
      client?: { ip: string; userAgent: string },
    ): PortalCall => ({
      call: { ...readCallContext(ctx), actor: "portal" },
      subscriberId: checkedId(subscriberId, "sub", "subscriber_id"),
      client: { ip: (client?.ip ?? "").slice(0, 64), userAgent: (client?.userAgent ?? "").slice(0, 512) },
      rateLimitHeaders: (headers) => {
        for (const [name, value] of Object.entries(headers)) ctx.responseHeader.set(name, value);
      },
    });
    router.service(portal.PreferenceCenterService, {
      async getPreferences(req, ctx) {
        return { preferences: preferencesToProto(await getPreferences(deps, portalCall(req.subscriberId, ctx))) };
      },
      async subscribeTag(req, ctx) {
        const view = await subscribeTag(deps, portalCall(req.subscriberId, ctx, req.client), checkedId(req.tagId, "tag", "tag_id"));
        return { preferences: preferencesToProto(view) };
      },
      async unsubscribeTag(req, ctx) {
        const view = await unsubscribeTag(deps, portalCall(req.subscriberId, ctx, req.client), checkedId(req.tagId, "tag", "tag_id"));
        return { preferences: preferencesToProto(view) };
      },
      async unsubscribeAll(req, ctx) {
        return { preferences: preferencesToProto(await unsubscribeAll(deps, portalCall(req.subscriberId, ctx, req.client))) };
      },
      async setLocale(req, ctx) {
        // The subscribers service judges the value (INVALID_ARGUMENT, passed on).
        return { preferences: preferencesToProto(await setLocale(deps, portalCall(req.subscriberId, ctx, req.client), req.locale)) };
      },
      async exportData(req, ctx) {
        const source = req.audit?.source === "api" ? "api" : "portal";
        const audit = { source, ip: (req.audit?.ip ?? "").slice(0, 64), userAgent: (req.audit?.userAgent ?? "").slice(0, 512) };
        const call = readCallContext(ctx);
        const json = await exportData(
          exportDeps,
          {
            call: source === "portal" ? { ...call, actor: "portal" } : call,
            subscriberId: checkedId(req.subscriberId, "sub", "subscriber_id"),
            rateLimitHeaders: (headers) => {
              for (const [name, value] of Object.entries(headers)) ctx.responseHeader.set(name, value);
            },
          },
          audit,
        );
        return { json };
      },
      async eraseAccount(req, ctx) {
        await eraseAccount(deps, portalCall(req.subscriberId, ctx, req.client));
        return {};
      },
    });
  };
}

function settingsToProto(view: PortalSettingsView): portal.PortalSettings {
  return create(portal.PortalSettingsSchema, {
    frameAncestors: view.frameAncestors,
    senderName: view.senderName,
    logoUrl: view.logoUrl,
    brandColor: view.brandColor,
    ...(view.updatedAt !== undefined ? { updatedAt: timestampFromMs(view.updatedAt) } : {}),
  });
}

/** The fields an update mask may name. */
const SETTINGS_FIELDS = ["frame_ancestors", "sender_name", "logo_url", "brand_color"];

/** Registers PortalSettingsService: an account's settings of its page. */
export function portalSettingsRoutes(deps: SettingsDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(portal.PortalSettingsService, {
      async getPortalSettings(_req, ctx) {
        return { settings: settingsToProto(await getPortalSettings(deps, readCallContext(ctx))) };
      },
      async updatePortalSettings(req, ctx) {
        // No mask: frame_ancestors (what the call meant before sender_name existed), and sender_name when set.
        const paths = req.updateMask?.paths ?? [];
        const unknown = paths.filter((path) => !SETTINGS_FIELDS.includes(path));
        if (unknown.length > 0) throw invalid(`update_mask names unknown fields: ${unknown.join(", ")}`, [{ field: "update_mask", description: `only ${SETTINGS_FIELDS.join(", ")}` }]);
        const change = {
          frameAncestors: paths.length === 0 || paths.includes("frame_ancestors") ? req.frameAncestors : undefined,
          senderName: paths.length === 0 ? req.senderName : paths.includes("sender_name") ? (req.senderName ?? "") : undefined,
          logoUrl: paths.includes("logo_url") ? req.logoUrl : undefined,
          brandColor: paths.includes("brand_color") ? req.brandColor : undefined,
        };
        return { settings: settingsToProto(await updatePortalSettings(deps, readCallContext(ctx), change)) };
      },
    });
  };
}

const DOMAIN_STATES: Record<CustomDomainView["state"], portal.CustomDomainState> = {
  pending_dns: portal.CustomDomainState.PENDING_DNS,
  issuing: portal.CustomDomainState.ISSUING,
  active: portal.CustomDomainState.ACTIVE,
  failed: portal.CustomDomainState.FAILED,
};

function customDomainToProto(view: CustomDomainView): portal.CustomDomain {
  const at = (ms: number | null) => (ms === null ? undefined : timestampFromMs(ms));
  return create(portal.CustomDomainSchema, {
    domain: view.domain,
    state: DOMAIN_STATES[view.state],
    dnsRecord: view.dnsRecord,
    reason: view.reason,
    lastCheckAt: at(view.lastCheckAt),
    nextCheckAt: at(view.nextCheckAt),
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
    activatedAt: at(view.activatedAt),
  });
}

/** Registers DomainService: an account's custom domain (the gateway checked the plan). */
export function domainRoutes(deps: CustomDomainDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(portal.DomainService, {
      async setCustomDomain(req, ctx) {
        return { customDomain: customDomainToProto(await setCustomDomain(deps, readCallContext(ctx), req.domain)) };
      },
      async getCustomDomain(_req, ctx) {
        return { customDomain: customDomainToProto(await getCustomDomain(deps, readCallContext(ctx))) };
      },
      async deleteCustomDomain(_req, ctx) {
        await deleteCustomDomain(deps, readCallContext(ctx));
        return {};
      },
      async resolveCustomDomain(_req, ctx) {
        return { domain: await resolveCustomDomain(deps, readCallContext(ctx)) };
      },
    });
  };
}

const FIELD_TYPES: Record<FormFieldType, portal.FormFieldType> = {
  text: portal.FormFieldType.TEXT,
  number: portal.FormFieldType.NUMBER,
  boolean: portal.FormFieldType.BOOLEAN,
};

function formToProto(view: SignupFormView, preferencesUrl: string): portal.SignupForm {
  return create(portal.SignupFormSchema, {
    id: view.id,
    name: view.name,
    tags: view.tags,
    optionalTags: view.optionalTags,
    askLocale: view.askLocale,
    fields: view.fields.map((f) => ({ name: f.name, label: f.label, type: FIELD_TYPES[f.type], required: f.required })),
    successUrl: view.successUrl,
    errorUrl: view.errorUrl,
    allowedOrigins: view.allowedOrigins,
    consentText: view.consentText,
    consentVersion: view.consentVersion,
    createdAt: timestampFromMs(view.createdAt),
    updatedAt: timestampFromMs(view.updatedAt),
    actionUrl: formActionUrl(preferencesUrl, view.id),
    snippet: formSnippet(view, preferencesUrl),
  });
}

function formFieldsFromProto(fields: readonly portal.FormField[]): FormSettings["fields"] {
  return fields.map((f, i) => {
    const type = (Object.keys(FIELD_TYPES) as FormFieldType[]).find((t) => FIELD_TYPES[t] === f.type);
    if (!type) throw invalid("a field has no type", [{ field: `fields[${i}].type`, description: "text, number or boolean" }]);
    return { name: f.name, label: f.label, type, required: f.required };
  });
}

function formSettingsFromProto(input: portal.FormInput | undefined): FormSettings {
  const i = input ?? create(portal.FormInputSchema);
  return {
    name: i.name,
    tags: i.tags,
    optionalTags: i.optionalTags,
    askLocale: i.askLocale,
    fields: formFieldsFromProto(i.fields),
    successUrl: i.successUrl,
    errorUrl: i.errorUrl,
    allowedOrigins: i.allowedOrigins,
    consentText: i.consentText,
    consentVersion: i.consentVersion,
  };
}

/** Registers FormService: an account's signup forms; `preferencesUrl` is where their posts go (PREFERENCES_URL). */
export function formRoutes(deps: FormDeps, preferencesUrl: string): (router: ConnectRouter) => void {
  return (router) => {
    router.service(portal.FormService, {
      async createForm(req, ctx) {
        return { form: formToProto(await createForm(deps, readCallContext(ctx), formSettingsFromProto(req.form)), preferencesUrl) };
      },
      async getForm(req, ctx) {
        return { form: formToProto(await getForm(deps, readCallContext(ctx), req.id), preferencesUrl) };
      },
      async listForms(req, ctx) {
        const page = await listForms(deps, readCallContext(ctx), { limit: req.limit, cursor: req.cursor });
        return { forms: page.forms.map((f) => formToProto(f, preferencesUrl)), nextCursor: page.nextCursor };
      },
      async updateForm(req, ctx) {
        const unknown = req.paths.filter((path) => !(path in FORM_SETTING_PATHS));
        if (unknown.length > 0) throw invalid(`paths names unknown fields: ${unknown.join(", ")}`, [{ field: "paths", description: `only ${Object.keys(FORM_SETTING_PATHS).join(", ")}` }]);
        const all = formSettingsFromProto(req.form);
        const change: Partial<FormSettings> = {};
        for (const path of req.paths) {
          const key = FORM_SETTING_PATHS[path as keyof typeof FORM_SETTING_PATHS];
          (change as Record<string, unknown>)[key] = all[key];
        }
        return { form: formToProto(await updateForm(deps, readCallContext(ctx), req.id, change), preferencesUrl) };
      },
      async deleteForm(req, ctx) {
        await deleteForm(deps, readCallContext(ctx), req.id);
        return {};
      },
    });
  };
}
