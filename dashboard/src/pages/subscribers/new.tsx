import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import { t } from "../../i18n";
import { Button, Field, FormProblem, Page, formValue, notify, submitLabel, useSubmit } from "../../kit";
import { href, navigate } from "../../router";
import { useCanWrite } from "../../session";
import { MetadataEditor, SUBSCRIBER_LOCALES, metadataObject, tagList, type MetadataRow } from "./shared";

export default function NewSubscriber() {
  const canWrite = useCanWrite("audience");
  const submit = useSubmit();
  const [rows, setRows] = useState<MetadataRow[]>([]);
  const p = submit.problem;

  const create = (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const locale = formValue(form, "locale");
    const tags = tagList(formValue(form, "tags"));
    const metadata = metadataObject(rows);
    void submit.run(async () => {
      const created = await ok(
        api.POST("/api/v1/subscribers", {
          body: {
            email: formValue(form, "email").trim(),
            ...(tags.length ? { tags } : {}),
            ...(Object.keys(metadata).length ? { metadata } : {}),
            ...(locale ? { locale: locale as (typeof SUBSCRIBER_LOCALES)[number] } : {}),
            ...(form.querySelector<HTMLInputElement>("[name=double_opt_in]")?.checked ? { double_opt_in: true } : {}),
          },
        }),
      );
      notify(t("subscribers.added", { email: created.email }));
      navigate(`/subscribers/${created.id}`);
    });
  };

  return (
    <Page title={t("subscribers.addTitle")}>
      <p>
        <a href={href("/subscribers")}>{t("subscribers.back")}</a>
      </p>
      {!canWrite ? (
        <p class="alert alert-info">{t("subscribers.readOnly")}</p>
      ) : (
        <form class="card form" onSubmit={create} noValidate>
          <FormProblem problem={p} />
          <Field label={t("field.email")} error={p?.field("email")}>
            <input name="email" type="email" required autoComplete="off" />
          </Field>
          <Field label={t("subscribers.tags")} hint={t("subscribers.tagsHint")} error={p?.field("tags")}>
            <input name="tags" autoComplete="off" />
          </Field>
          <Field label={t("subscribers.locale")} error={p?.field("locale")}>
            <select name="locale">
              <option value="">{t("subscribers.noLocale")}</option>
              {SUBSCRIBER_LOCALES.map((l) => (
                <option key={l} value={l}>
                  {t(`subscribers.locale.${l}`)}
                </option>
              ))}
            </select>
          </Field>
          <MetadataEditor rows={rows} onChange={setRows} error={p?.errors.find((e) => e.field.startsWith("metadata"))?.message} />
          <div class="checkbox">
            <input id="new-double-opt-in" name="double_opt_in" type="checkbox" aria-describedby="new-double-opt-in-hint" />
            <label for="new-double-opt-in">{t("subscribers.doubleOptIn")}</label>
          </div>
          <p class="hint" id="new-double-opt-in-hint">
            {t("subscribers.doubleOptInHint")}
          </p>
          <Button type="submit" variant="primary" busy={submit.busy}>
            {submitLabel(submit.busy, t("subscribers.addSubmit"))}
          </Button>
        </form>
      )}
    </Page>
  );
}
