import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { Button, Field, FormProblem, formValue, LoadMore, Loadable, notify, Section, submitLabel, TableWrap, usePaged, useSubmit } from "../../kit";
import { useCanWrite } from "../../session";

type Tag = components["schemas"]["Tag"];
type Translations = NonNullable<components["schemas"]["TagUpdate"]["translations"]>;

/** The languages of the preference page a tag may be translated into (the API's translations keys). */
const LANGUAGES = ["de", "en", "fr", "it"] as const;

/**
 * The public tags as subscribers read them on the preference page: each
 * tag's name and description per language (PATCH /api/v1/tags/{id}
 * `translations`, which replaces them all). Private tags never show there.
 */
export default function TagTranslations() {
  const canWrite = useCanWrite("audience");
  const { handle, more, loadMore } = usePaged(async (cursor) => {
    const page = await ok(api.GET("/api/v1/tags", { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } }));
    return { items: page.items.filter((tag) => tag.is_public), next_cursor: page.next_cursor };
  }, []);
  const [editing, setEditing] = useState<Tag | undefined>();

  const saved = (tag: Tag) => {
    if (handle.result.state === "ready") handle.set({ ...handle.result.data, items: handle.result.data.items.map((item) => (item.id === tag.id ? tag : item)) });
    setEditing(undefined);
  };

  return (
    <Section title={t("tagTranslations.title")} id="tag-translations">
      <p>{t("tagTranslations.intro")}</p>
      <Loadable handle={handle} isEmpty={(data) => data.items.length === 0 && !data.next} empty={t("tagTranslations.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("tagTranslations.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("tagTranslations.tag")}</th>
                    {LANGUAGES.map((lang) => (
                      <th scope="col" key={lang}>
                        {t(`tagTranslations.lang.${lang}`)}
                      </th>
                    ))}
                    {canWrite ? <th scope="col">{t("tagTranslations.actions")}</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((tag) => (
                    <tr key={tag.id}>
                      <th scope="row">{tag.name}</th>
                      {LANGUAGES.map((lang) => (
                        <td key={lang}>{tag.translations[lang]?.name ?? <span class="hint">{t("tagTranslations.none")}</span>}</td>
                      ))}
                      {canWrite ? (
                        <td>
                          <Button class="button-small" onClick={() => setEditing(tag)} aria-label={t("tagTranslations.editLabel", { tag: tag.name })}>
                            {t("tagTranslations.edit")}
                          </Button>
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
            <LoadMore next={data.next} more={more} onClick={loadMore} />
          </>
        )}
      </Loadable>
      {editing ? <TranslationForm key={editing.id} tag={editing} onSaved={saved} onCancel={() => setEditing(undefined)} /> : null}
    </Section>
  );
}

function TranslationForm(props: { tag: Tag; onSaved: (tag: Tag) => void; onCancel: () => void }) {
  const { tag } = props;
  const submit = useSubmit();
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const translations: Translations = {};
    for (const lang of LANGUAGES) {
      const name = formValue(form, `${lang}.name`).trim();
      // A language without a name has no translation: the page shows the tag's own.
      if (name) translations[lang] = { name, description: formValue(form, `${lang}.description`).trim() };
    }
    const updated = await submit.run(() => ok(api.PATCH("/api/v1/tags/{id}", { params: { path: { id: tag.id } }, body: { translations } })));
    if (!updated) return;
    notify(t("tagTranslations.saved", { tag: tag.name }));
    props.onSaved(updated);
  };
  return (
    <form onSubmit={onSubmit} class="subform" aria-labelledby="translation-form-title">
      <h3 id="translation-form-title">{t("tagTranslations.formTitle", { tag: tag.name })}</h3>
      {LANGUAGES.map((lang) => (
        <fieldset key={lang}>
          <legend>{t(`tagTranslations.lang.${lang}`)}</legend>
          <Field label={t("tagTranslations.name", { language: t(`tagTranslations.lang.${lang}`) })} error={submit.problem?.field(`translations.${lang}.name`)}>
            <input name={`${lang}.name`} lang={lang} maxLength={100} defaultValue={tag.translations[lang]?.name ?? ""} />
          </Field>
          <Field label={t("tagTranslations.description", { language: t(`tagTranslations.lang.${lang}`) })} error={submit.problem?.field(`translations.${lang}.description`)}>
            <input name={`${lang}.description`} lang={lang} maxLength={500} defaultValue={tag.translations[lang]?.description ?? ""} />
          </Field>
        </fieldset>
      ))}
      <FormProblem problem={submit.problem} />
      <div class="page-actions">
        <Button type="submit" variant="primary" busy={submit.busy}>
          {submitLabel(submit.busy, t("tagTranslations.save"))}
        </Button>
        <Button onClick={props.onCancel}>{t("action.cancel")}</Button>
      </div>
    </form>
  );
}
