import { useRef, useState } from "preact/hooks";
import { api, currentMode, ok, type FieldProblem } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Button, Field, FormProblem, Loadable, LoadMore, Page, Section, submitLabel, TableWrap, useLoad, usePaged, useSubmit } from "../../kit";
import { href, navigate } from "../../router";
import type { PageProps } from "../../routes";
import { useCanWrite, useSession } from "../../session";
import { PreviewFrames, useDraftPreview } from "./preview";
import { lineOf, sampleVariables } from "./variables";

type Template = components["schemas"]["Template"];
type Category = components["schemas"]["TemplateCategory"];

const STARTER_MJML = `<mjml>
  <mj-body>
    <mj-section>
      <mj-column>
        <mj-text>Hello {{first_name}},</mj-text>
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>
`;

/** /templates/new and /templates/:id: the same editor, empty or with the saved template. */
export default function TemplateEditorPage(props: PageProps) {
  const id = props.params.id;
  if (!id) return <Editor />;
  return <SavedEditor id={id} />;
}

function SavedEditor(props: { id: string }) {
  const handle = useLoad(() => ok(api.GET("/api/v1/templates/{id}", { params: { path: { id: props.id } } })), [props.id]);
  if (handle.result.state !== "ready") {
    return (
      <Page title={t("templates.template")} actions={<a href={href("/templates")}>{t("templates.back")}</a>}>
        <Loadable handle={handle}>{() => null}</Loadable>
      </Page>
    );
  }
  return <Editor saved={handle.result.data} onSaved={handle.set} />;
}

/** Moves the caret of the MJML editor to a line and selects it, with the focus. */
function goToLine(textarea: HTMLTextAreaElement | null, line: number): void {
  if (!textarea) return;
  const lines = textarea.value.split("\n");
  const start = lines.slice(0, Math.max(0, line - 1)).reduce((sum, l) => sum + l.length + 1, 0);
  textarea.focus();
  textarea.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
}

/** Problems of one field, each with a button to its line where it names one. */
function LineProblems(props: { label: string; problems: FieldProblem[]; editor: HTMLTextAreaElement | null; id: string }) {
  if (props.problems.length === 0) return null;
  return (
    <div class="alert alert-error" id={props.id} role="alert">
      <p>
        <strong>{props.label}</strong>
      </p>
      <ul class="mjml-problems">
        {props.problems.map((p, i) => {
          const line = lineOf(p.message);
          return (
            <li key={i}>
              {p.message}{" "}
              {line && props.editor ? (
                <button type="button" class="button button-small" onClick={() => goToLine(props.editor, line)}>
                  {t("templates.goToLine", { line })}
                </button>
              ) : null}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function Editor(props: { saved?: Template; onSaved?: (tpl: Template) => void }) {
  const saved = props.saved;
  const session = useSession()!;
  const canWrite = useCanWrite("templates");
  const canSend = useCanWrite("send");
  const submit = useSubmit();
  const send = useSubmit();
  const editorRef = useRef<HTMLTextAreaElement>(null);
  const [name, setName] = useState(saved?.name ?? "");
  const [slug, setSlug] = useState(saved?.slug ?? "");
  const [category, setCategory] = useState<Category>(saved?.category ?? "transactional");
  const [subject, setSubject] = useState(saved?.subject ?? "");
  const [mjml, setMjml] = useState(saved?.mjml_content ?? STARTER_MJML);
  const [values, setValues] = useState<Record<string, string>>({});
  const [sent, setSent] = useState<{ id: string; to: string } | undefined>();
  const dirty = !saved || name !== saved.name || category !== saved.category || subject !== saved.subject || mjml !== saved.mjml_content;

  // A subject is required; until there is one, the preview shows a stand-in rather than a problem.
  const preview = useDraftPreview(subject.trim() ? subject : t("templates.noSubject"), mjml, sampleVariables(values));
  const known = preview.state === "ready" ? preview.data : preview.last;
  const paths = known?.variables ?? saved?.variables ?? [];
  const variables = sampleVariables(Object.fromEntries(paths.map((p) => [p, values[p] ?? ""])));
  // The content's problems come from the live preview, which runs the checks a save runs, as the member types.
  const live = preview.state === "error" ? preview.error.errors : [];
  const mjmlProblems = live.filter((e) => e.field === "mjml_content");
  const subjectProblems = live.filter((e) => e.field === "subject");
  const problem = submit.problem;
  const otherProblem = problem && (problem.errors.length === 0 || problem.errors.some((e) => e.field !== "mjml_content" && e.field !== "subject")) ? problem : undefined;

  const save = async (event: Event) => {
    event.preventDefault();
    const result = await submit.run(async () => {
      if (!saved) {
        return ok(api.POST("/api/v1/templates", { body: { name, subject, mjml_content: mjml, category, ignore_suppressions: [], ...(slug.trim() ? { slug: slug.trim() } : {}) } }));
      }
      const changes: components["schemas"]["TemplateUpdate"] = {};
      if (name !== saved.name) changes.name = name;
      if (subject !== saved.subject) changes.subject = subject;
      if (mjml !== saved.mjml_content) changes.mjml_content = mjml;
      if (category !== saved.category) changes.category = category;
      return ok(api.PATCH("/api/v1/templates/{id}", { params: { path: { id: saved.id } }, body: changes }));
    });
    if (!result) return;
    if (!saved) navigate(`/templates/${result.id}`, { replace: true });
    else props.onSaved?.(result);
  };

  const sendTest = async () => {
    if (!saved) return;
    setSent(undefined);
    const email = await send.run(() => ok(api.POST("/api/v1/emails/send", { body: { template_slug: saved.slug, to: session.member.email, variables } })));
    if (email) setSent({ id: email.id, to: session.member.email });
  };

  return (
    <Page
      title={saved ? saved.name : t("templates.new")}
      description={saved ? t("templates.savedAs", { slug: saved.slug, version: saved.version }) : t("templates.newIntro")}
      actions={<a href={href("/templates")}>{t("templates.back")}</a>}
    >
      <div class="editor-layout">
        <Section title={t("templates.content")}>
          <form onSubmit={save}>
            <fieldset disabled={!canWrite} class="plain-fieldset">
              <legend class="visually-hidden">{t("templates.content")}</legend>
              <Field label={t("templates.name")} error={problem?.field("name")}>
                <input value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
              </Field>
              {saved ? null : (
                <Field label={t("templates.slug")} hint={t("templates.slugHint")} error={problem?.field("slug")}>
                  <input value={slug} onInput={(e) => setSlug(e.currentTarget.value)} maxLength={100} autoComplete="off" />
                </Field>
              )}
              <Field label={t("templates.category")} hint={t("templates.categoryHint")} error={problem?.field("category")}>
                <select value={category} onChange={(e) => setCategory(e.currentTarget.value as Category)}>
                  <option value="transactional">{t("templates.category.transactional")}</option>
                  <option value="marketing">{t("templates.category.marketing")}</option>
                </select>
              </Field>
              <Field label={t("templates.subject")} error={subjectProblems[0]?.message}>
                <input value={subject} onInput={(e) => setSubject(e.currentTarget.value)} required maxLength={998} />
              </Field>
              <Field label={t("templates.mjml")} hint={t("templates.mjmlHint")} error={mjmlProblems.length > 0 ? t("templates.mjmlInvalid", { count: mjmlProblems.length }) : undefined}>
                <textarea ref={editorRef} class="code-editor" value={mjml} onInput={(e) => setMjml(e.currentTarget.value)} spellcheck={false} autoComplete="off" rows={18} wrap="off" />
              </Field>
              <LineProblems id="mjml-problems" label={t("templates.mjmlProblems")} problems={mjmlProblems} editor={editorRef.current} />
              <FormProblem problem={otherProblem} />
              {canWrite ? (
                <Button type="submit" variant="primary" busy={submit.busy} disabled={!dirty}>
                  {submitLabel(submit.busy, saved ? t("templates.save") : t("templates.create"))}
                </Button>
              ) : (
                <p class="hint">{t("templates.readOnly")}</p>
              )}
              {saved && dirty ? <p class="hint">{t("templates.unsaved")}</p> : null}
            </fieldset>
          </form>
        </Section>
        <Section title={t("templates.preview")}>
          <fieldset>
            <legend>{t("templates.samples")}</legend>
            {paths.length === 0 ? <p class="hint">{t("templates.noVariables")}</p> : null}
            {paths.map((path) => (
              <Field key={path} label={path}>
                <input value={values[path] ?? ""} onInput={(e) => setValues({ ...values, [path]: e.currentTarget.value })} autoComplete="off" />
              </Field>
            ))}
          </fieldset>
          <PreviewFrames preview={preview} />
          {saved && canSend ? (
            <div class="test-send">
              {dirty ? <p class="hint">{t("templates.testUsesSaved", { version: saved.version })}</p> : null}
              <FormProblem problem={send.problem} />
              <Button onClick={sendTest} busy={send.busy}>
                {submitLabel(send.busy, t("templates.sendTest"))}
              </Button>
              {sent ? (
                <p class="alert alert-success" role="status">
                  {t(currentMode() === "test" ? "templates.sentSandbox" : "templates.sentLive", { to: sent.to })}{" "}
                  <a href={href(`/emails/${sent.id}`)}>{t("templates.openSent")}</a>
                </p>
              ) : null}
            </div>
          ) : null}
        </Section>
      </div>
      {saved ? <Versions template={saved} /> : null}
    </Page>
  );
}

/** The template's committed versions, newest first; each opens read-only. */
function Versions(props: { template: Template }) {
  const id = props.template.id;
  const { handle, more, loadMore } = usePaged(
    async (cursor) => ok(api.GET("/api/v1/templates/{id}/versions", { params: { path: { id }, query: { limit: 20, cursor } } })),
    [id, props.template.version],
  );
  return (
    <Section title={t("templates.versions")}>
      <Loadable handle={handle}>
        {(data) => (
          <>
            <TableWrap label={t("templates.versions")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("templates.version")}</th>
                    <th scope="col">{t("templates.subject")}</th>
                    <th scope="col">{t("templates.versionMade")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((v) => (
                    <tr key={v.version}>
                      <td>
                        <a href={href(`/templates/${id}/versions/${v.version}`)}>{t("templates.versionBadge", { version: v.version })}</a>
                        {v.version === props.template.version ? ` (${t("templates.current")})` : null}
                      </td>
                      <td>{v.subject}</td>
                      <td>{formatDateTime(v.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
            <LoadMore next={data.next} more={more} onClick={loadMore} />
          </>
        )}
      </Loadable>
    </Section>
  );
}
