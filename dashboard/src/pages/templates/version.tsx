import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import { formatDateTime, t } from "../../i18n";
import { Field, Loadable, Page, Section, useLoad } from "../../kit";
import { href } from "../../router";
import type { PageProps } from "../../routes";
import { PreviewFrames, useDraftPreview } from "./preview";
import { sampleVariables } from "./variables";

/** /templates/:id/versions/:version: one committed version, read-only, with its render. */
export default function TemplateVersionPage(props: PageProps) {
  const id = props.params.id!;
  const version = props.params.version!;
  const handle = useLoad(() => ok(api.GET("/api/v1/templates/{id}/versions/{version}", { params: { path: { id, version } } })), [id, version]);
  return (
    <Page title={t("templates.versionTitle", { version })} actions={<a href={href(`/templates/${id}`)}>{t("templates.backToTemplate")}</a>}>
      <Loadable handle={handle}>
        {(v) => (
          <div class="editor-layout">
            <Section title={t("templates.content")}>
              <p class="hint">{t("templates.versionReadOnly", { at: formatDateTime(v.created_at) })}</p>
              <Field label={t("templates.subject")}>
                <input value={v.subject} readOnly />
              </Field>
              <Field label={t("templates.mjml")}>
                <textarea class="code-editor" value={v.mjml_content} readOnly rows={18} wrap="off" spellcheck={false} />
              </Field>
            </Section>
            <VersionPreview subject={v.subject} mjml={v.mjml_content} paths={v.variables} />
          </div>
        )}
      </Loadable>
    </Page>
  );
}

function VersionPreview(props: { subject: string; mjml: string; paths: string[] }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const preview = useDraftPreview(props.subject, props.mjml, sampleVariables(values));
  return (
    <Section title={t("templates.preview")}>
      {props.paths.length > 0 ? (
        <fieldset>
          <legend>{t("templates.samples")}</legend>
          {props.paths.map((path) => (
            <Field key={path} label={path}>
              <input value={values[path] ?? ""} onInput={(e) => setValues({ ...values, [path]: e.currentTarget.value })} autoComplete="off" />
            </Field>
          ))}
        </fieldset>
      ) : null}
      <PreviewFrames preview={preview} />
    </Section>
  );
}
