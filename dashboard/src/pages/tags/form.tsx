// The tag form of the new-tag and edit pages: name, description, public,
// and the name and description subscribers read in each language of the
// platform (the API's `translations`).

import { t } from "../../i18n";
import { Button, Field, FormProblem, formValue, submitLabel, useSubmit } from "../../kit";
import type { components } from "../../api/schema";

export type Tag = components["schemas"]["Tag"];
type Translations = NonNullable<components["schemas"]["TagCreate"]["translations"]>;
export const TAG_LOCALES = ["en", "de", "fr", "it"] as const;

export interface TagFields {
  name: string;
  description: string;
  is_public: boolean;
  translations: Translations;
}

/** The form's values: a language whose name is empty has no translation. */
function readForm(form: HTMLFormElement): TagFields {
  const translations: Translations = {};
  for (const locale of TAG_LOCALES) {
    const name = formValue(form, `name_${locale}`).trim();
    if (name) translations[locale] = { name, description: formValue(form, `description_${locale}`).trim() };
  }
  return {
    name: formValue(form, "name").trim(),
    description: formValue(form, "description").trim(),
    is_public: form.querySelector<HTMLInputElement>("[name=is_public]")?.checked ?? false,
    translations,
  };
}

export function TagForm(props: { tag?: Tag; submitLabel: string; onSubmit: (fields: TagFields) => Promise<unknown>; disabled?: boolean }) {
  const submit = useSubmit();
  const p = submit.problem;
  const tag = props.tag;
  const send = (e: Event) => {
    e.preventDefault();
    const fields = readForm(e.currentTarget as HTMLFormElement);
    void submit.run(() => props.onSubmit(fields));
  };
  return (
    <form class="form" onSubmit={send} noValidate>
      <FormProblem problem={p} />
      <fieldset disabled={props.disabled}>
        <legend class="visually-hidden">{t("tags.details")}</legend>
        <Field label={t("tags.name")} hint={t("tags.nameHint")} error={p?.field("name")}>
          <input name="name" required maxLength={100} defaultValue={tag?.name ?? ""} autoComplete="off" />
        </Field>
        <Field label={t("tags.description")} error={p?.field("description")}>
          <textarea name="description" maxLength={500} rows={2} defaultValue={tag?.description ?? ""} />
        </Field>
        <div class="checkbox">
          <input id="tag-public" name="is_public" type="checkbox" defaultChecked={tag?.is_public ?? false} aria-describedby="tag-public-hint" />
          <label for="tag-public">{t("tags.public")}</label>
        </div>
        <p class="hint" id="tag-public-hint">
          {t("tags.publicHint")}
        </p>
      </fieldset>
      <fieldset disabled={props.disabled}>
        <legend>{t("tags.translations")}</legend>
        <p class="hint">{t("tags.translationsHint")}</p>
        {TAG_LOCALES.map((locale) => (
          <div class="grid" key={locale}>
            <Field label={t("tags.translationName", { language: t(`subscribers.locale.${locale}`) })} error={p?.field(`translations.${locale}.name`)}>
              <input name={`name_${locale}`} lang={locale} maxLength={100} defaultValue={tag?.translations[locale]?.name ?? ""} autoComplete="off" />
            </Field>
            <Field label={t("tags.translationDescription", { language: t(`subscribers.locale.${locale}`) })} error={p?.field(`translations.${locale}.description`)}>
              <input name={`description_${locale}`} lang={locale} maxLength={500} defaultValue={tag?.translations[locale]?.description ?? ""} autoComplete="off" />
            </Field>
          </div>
        ))}
      </fieldset>
      {props.disabled ? null : (
        <Button type="submit" variant="primary" busy={submit.busy}>
          {submitLabel(submit.busy, props.submitLabel)}
        </Button>
      )}
    </form>
  );
}
