import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, ApiProblem, currentMode, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { Badge, Button, Field, FormProblem, Loadable, Page, Section, submitLabel, useDebounced, useLoad, useSubmit } from "../../kit";
import { ErrorState, Loading } from "../../kit";
import { href, navigate } from "../../router";
import type { PageProps } from "../../routes";
import { useCanWrite, useSession } from "../../session";
import { lineOf, readVariablePaths, sampleVariables } from "./variables";

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
      <Page title={t("templates.template")}>
        <Loadable handle={handle}>{() => null}</Loadable>
        <p>
          <a href={href("/templates")}>{t("templates.back")}</a>
        </p>
      </Page>
    );
  }
  return <Editor saved={handle.result.data} onSaved={handle.set} />;
}

/** Moves the caret of the MJML editor to the start of a line, and the focus there. */
function goToLine(textarea: HTMLTextAreaElement | null, line: number): void {
  if (!textarea) return;
  const lines = textarea.value.split("\n");
  const offset = lines.slice(0, Math.max(0, line - 1)).reduce((sum, l) => sum + l.length + 1, 0);
  textarea.focus();
  textarea.setSelectionRange(offset, offset + (lines[line - 1]?.length ?? 0));
}

function Editor(props: { saved?: Template; onSaved?: (tpl: Template) => void }) {
  const saved = props.saved;
  const canWrite = useCanWrite("templates");
  const submit = useSubmit();
  const editorRef = useRef<HTMLTextAreaElement>(null);
  const [name, setName] = useState(saved?.name ?? "");
  const [slug, setSlug] = useState(saved?.slug ?? "");
  const [category, setCategory] = useState<Category>(saved?.category ?? "transactional");
  const [subject, setSubject] = useState(saved?.subject ?? "");
  const [mjml, setMjml] = useState(saved?.mjml_content ?? STARTER_MJML);
  const dirty = !saved || name !== saved.name || category !== saved.category || subject !== saved.subject || mjml !== saved.mjml_content;
  const contentChanged = !!saved && (subject !== saved.subject || mjml !== saved.mjml_content);
  const paths = useMemo(() => readVariablePaths(subject, mjml), [subject, mjml]);
  const problem = submit.problem;
  const mjmlProblems = problem?.errors.filter((e) => e.field === "mjml_content") ?? [];

  const save = async (event: Event) => {
    event.preventDefault();
    const result = await submit.run(async () => {
      if (!saved) {
        return ok(
          api.POST("/api/v1/templates", {
            body: { name, subject, mjml_content: mjml, category, ignore_suppressions: [], ...(slug.trim() ? { slug: slug.trim() } : {}) },
          }),
        );
      }
      const changes: components["schemas"]["TemplateUpdate"] = {};
      if (name !== saved.name) changes.name = name;
      if (subject !== saved.subject) changes.subject = subject;
      if (mjml !== saved.mjml_content) changes.mjml_content = mjml;
      if (category !== saved.category) changes.category = category;
      return ok(api.PATCH("/api/v1/templates/{id}", { params: { path: { id: saved.id } }, body: changes }));
    });
    if (!result) return;
    if (!saved) {
      navigate(`/templates/${result.id}`);
      return;
    }
    props.onSaved?.(result);
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
              <Field label={t("templates.subject")} error={problem?.field("subject")}>
                <input value={subject} onInput={(e) => setSubject(e.currentTarget.value)} required maxLength={998} />
              </Field>
              <Field label={t("templates.mjml")} hint={t("templates.mjmlHint")} error={mjmlProblems.length > 0 ? t("templates.mjmlInvalid", { count: mjmlProblems.length }) : undefined}>
                <textarea
                  ref={editorRef}
                  class="code-editor"
                  value={mjml}
                  onInput={(e) => setMjml(e.currentTarget.value)}
                  spellcheck={false}
                  autoComplete="off"
                  rows={18}
                  wrap="off"
                />
              </Field>
              {mjmlProblems.length > 0 ? (
                <ul class="mjml-problems" aria-label={t("templates.mjmlProblems")}>
                  {mjmlProblems.map((p, i) => {
                    const line = lineOf(p.message);
                    return (
                      <li key={i}>
                        {p.message}{" "}
                        {line ? (
                          <button type="button" class="button button-small" onClick={() => goToLine(editorRef.current, line)}>
                            {t("templates.goToLine", { line })}
                          </button>
                        ) : null}
                      </li>
                    );
                  })}
                </ul>
              ) : null}
              <FormProblem problem={problem} />
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
        {saved ? (
          <Preview template={saved} paths={paths} contentChanged={contentChanged} />
        ) : (
          <Section title={t("templates.preview")}>
            <p>{t("templates.previewAfterCreate")}</p>
          </Section>
        )}
      </div>
      {saved ? <Versions template={saved} /> : null}
    </Page>
  );
}

type Rendered = components["schemas"]["TemplatePreview"];

/**
 * The saved version rendered by the API (POST /templates/{id}/preview) with
 * the sample values, at a desktop and a phone width; asked again half a
 * second after the values change, and after each save.
 */
function Preview(props: { template: Template; paths: string[]; contentChanged: boolean }) {
  const { template } = props;
  const session = useSession()!;
  const canSend = useCanWrite("send");
  const [values, setValues] = useState<Record<string, string>>({});
  const variablesJson = JSON.stringify(sampleVariables(Object.fromEntries(props.paths.map((p) => [p, values[p] ?? ""]))));
  const settled = useDebounced(variablesJson, 500);
  const [rendered, setRendered] = useState<{ state: "loading" } | { state: "ready"; data: Rendered } | { state: "error"; error: ApiProblem }>({ state: "loading" });
  const generation = useRef(0);
  const send = useSubmit();
  const [sent, setSent] = useState<{ id: string; to: string } | undefined>();

  useEffect(() => {
    const mine = ++generation.current;
    ok(api.POST("/api/v1/templates/{id}/preview", { params: { path: { id: template.id } }, body: { variables: JSON.parse(settled) as Record<string, unknown> } })).then(
      (data) => mine === generation.current && setRendered({ state: "ready", data }),
      (err: unknown) => mine === generation.current && setRendered({ state: "error", error: err instanceof ApiProblem ? err : new ApiProblem(0, "error", String(err)) }),
    );
  }, [settled, template.id, template.version]);

  const sendTest = async () => {
    setSent(undefined);
    const email = await send.run(() =>
      ok(
        api.POST("/api/v1/emails/send", {
          body: { template_slug: template.slug, to: session.member.email, variables: JSON.parse(variablesJson) as Record<string, unknown> },
        }),
      ),
    );
    if (email) setSent({ id: email.id, to: session.member.email });
  };

  return (
    <Section title={t("templates.preview")}>
      {props.contentChanged ? (
        <p class="alert alert-warn" role="status">
          {t("templates.previewIsSaved", { version: template.version })}
        </p>
      ) : null}
      <fieldset>
        <legend>{t("templates.samples")}</legend>
        {props.paths.length === 0 ? <p class="hint">{t("templates.noVariables")}</p> : null}
        {props.paths.map((path) => (
          <Field key={path} label={path}>
            <input value={values[path] ?? ""} onInput={(e) => setValues({ ...values, [path]: e.currentTarget.value })} autoComplete="off" />
          </Field>
        ))}
      </fieldset>
      {rendered.state === "loading" ? <Loading /> : null}
      {rendered.state === "error" ? <ErrorState problem={rendered.error} /> : null}
      {rendered.state === "ready" ? (
        <>
          <p>
            <strong>{t("templates.subject")}:</strong> <span data-testid="preview-subject">{rendered.data.subject}</span>
          </p>
          {rendered.data.missing_variables.length > 0 ? (
            <p class="hint">{t("templates.missing", { names: rendered.data.missing_variables.join(", ") })}</p>
          ) : null}
          <div class="preview-pair">
            <figure>
              <figcaption>{t("templates.desktop")}</figcaption>
              <div class="preview-scroll">
                <iframe class="preview-frame desktop" sandbox="" srcdoc={rendered.data.html} title={t("templates.previewDesktop")} />
              </div>
            </figure>
            <figure>
              <figcaption>{t("templates.phone")}</figcaption>
              <div class="preview-scroll">
                <iframe class="preview-frame phone" sandbox="" srcdoc={rendered.data.html} title={t("templates.previewPhone")} />
              </div>
            </figure>
          </div>
        </>
      ) : null}
      {canSend ? (
        <div class="test-send">
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
  );
}

/**
 * The template's versions as the API shows them: the current number and
 * when it was made. The API keeps every version (mail queued with one is
 * sent with it) but lists none, so an older one cannot be opened here.
 */
function Versions(props: { template: Template }) {
  return (
    <Section title={t("templates.versions")}>
      <p>
        <Badge tone="info">{t("templates.versionBadge", { version: props.template.version })}</Badge> {t("templates.versionsNote")}
      </p>
    </Section>
  );
}
