import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Button, Field, FormProblem, formValue, Loadable, notify, Section, submitLabel, useLoad, useSubmit } from "../../kit";
import { useCanWrite } from "../../session";

type Settings = components["schemas"]["PortalSettings"];

const COLOR = /^#[0-9a-fA-F]{6}$/;

/** "" to null: an emptied field removes the setting. */
const orNull = (value: string) => (value.trim() === "" ? null : value.trim());

/** The preference page's branding (sender name, logo, colour) and who may embed it, in the mode shown. */
export default function Branding() {
  const canWrite = useCanWrite("settings");
  const handle = useLoad(() => ok(api.GET("/api/v1/portal-settings", {})), []);
  const submit = useSubmit();
  const [color, setColor] = useState<string | undefined>();

  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const body = {
      sender_name: orNull(formValue(form, "sender_name")),
      logo_url: orNull(formValue(form, "logo_url")),
      brand_color: orNull(formValue(form, "brand_color")),
      frame_ancestors: formValue(form, "frame_ancestors")
        .split(/\s+/)
        .filter((source) => source !== ""),
    };
    const saved = await submit.run(() => ok(api.PATCH("/api/v1/portal-settings", { body })));
    if (!saved) return;
    handle.set(saved);
    notify(t("branding.saved"));
  };

  return (
    <Section title={t("branding.title")} id="branding">
      <p>{t("branding.intro")}</p>
      <Loadable handle={handle}>
        {(settings: Settings) => {
          const shownColor = color ?? settings.brand_color ?? "";
          return (
            <form onSubmit={onSubmit}>
              <fieldset disabled={!canWrite}>
                <legend class="visually-hidden">{t("branding.title")}</legend>
                <Field label={t("branding.senderName")} hint={t("branding.senderNameHint")} error={submit.problem?.field("sender_name")}>
                  <input name="sender_name" maxLength={100} defaultValue={settings.sender_name ?? ""} autoComplete="organization" />
                </Field>
                <Field label={t("branding.logoUrl")} hint={t("branding.logoUrlHint")} error={submit.problem?.field("logo_url")}>
                  <input name="logo_url" type="url" maxLength={2048} defaultValue={settings.logo_url ?? ""} placeholder="https://www.example.com/logo.png" spellcheck={false} />
                </Field>
                <Field label={t("branding.color")} hint={t("branding.colorHint")} error={submit.problem?.field("brand_color")}>
                  <input
                    name="brand_color"
                    maxLength={7}
                    defaultValue={settings.brand_color ?? ""}
                    placeholder="#0a58ca"
                    spellcheck={false}
                    autoComplete="off"
                    onInput={(e) => setColor(e.currentTarget.value)}
                  />
                </Field>
                {COLOR.test(shownColor) ? (
                  <p class="swatch-row">
                    <span class="swatch" style={{ background: shownColor }} aria-hidden="true" />
                    <code>{shownColor}</code>
                  </p>
                ) : null}
                <Field label={t("branding.frameAncestors")} hint={t("branding.frameAncestorsHint")} error={submit.problem?.field("frame_ancestors")}>
                  <textarea name="frame_ancestors" rows={3} defaultValue={settings.frame_ancestors.join("\n")} spellcheck={false} />
                </Field>
              </fieldset>
              {settings.updated_at ? <p class="hint">{t("branding.updated", { at: formatDateTime(settings.updated_at) })}</p> : null}
              <FormProblem problem={submit.problem} />
              {canWrite ? (
                <Button type="submit" variant="primary" busy={submit.busy}>
                  {submitLabel(submit.busy, t("branding.save"))}
                </Button>
              ) : null}
            </form>
          );
        }}
      </Loadable>
    </Section>
  );
}
