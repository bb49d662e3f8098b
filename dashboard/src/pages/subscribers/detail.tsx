import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import { formatDateTime, t } from "../../i18n";
import { Button, ConfirmDialog, Field, FormProblem, LoadMore, Loadable, Page, Section, TableWrap, formValue, notify, saveFile, submitLabel, useLoad, usePaged, useSubmit, type LoadHandle } from "../../kit";
import type { PageProps } from "../../routes";
import { href } from "../../router";
import { useCanWrite } from "../../session";
import { EmailTable } from "../emails/table";
import { MetadataEditor, SUBSCRIBER_LOCALES, StatusBadge, metadataRows, metadataValue, tagList, type MetadataRow, type Subscriber } from "./shared";

export default function SubscriberPage(props: PageProps) {
  const id = props.params.id ?? "";
  const handle = useLoad(() => ok(api.GET("/api/v1/subscribers/{id}", { params: { path: { id } } })), [id]);
  const title = handle.result.state === "ready" ? handle.result.data.email : t("subscribers.one");
  return (
    <Page title={title} actions={handle.result.state === "ready" ? <Actions subscriber={handle.result.data} handle={handle} /> : null}>
      <p>
        <a href={href("/subscribers")}>{t("subscribers.back")}</a>
      </p>
      <Loadable handle={handle}>
        {(s) => (
          <>
            <Profile subscriber={s} handle={handle} />
            <Tags subscriber={s} handle={handle} />
            {/* A new key per stored version: after any change the rows show the metadata as stored. */}
            <Metadata key={s.updated_at} subscriber={s} handle={handle} />
            <Emails id={s.id} />
            <Trail id={s.id} updatedAt={s.updated_at} />
          </>
        )}
      </Loadable>
    </Page>
  );
}

type Handle = LoadHandle<Subscriber>;

/** What this subscriber was sent, newest first (the email log narrowed to them), each linked to the message. */
function Emails(props: { id: string }) {
  const { handle, more, loadMore } = usePaged(
    async (cursor) => ok(api.GET("/api/v1/emails", { params: { query: { limit: 20, cursor, subscriber_id: props.id } } })),
    [props.id],
  );
  return (
    <Section title={t("subscribers.emails")}>
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("subscribers.emailsEmpty")}>
        {(data) => (
          <>
            <EmailTable label={t("subscribers.emailsTable")} emails={data.items} columns={["queued", "template", "status", "reason"]} />
            <LoadMore next={data.next} more={more} onClick={loadMore} />
          </>
        )}
      </Loadable>
    </Section>
  );
}

/** Export (every role), unsubscribe and erase (writers). */
function Actions(props: { subscriber: Subscriber; handle: Handle }) {
  const s = props.subscriber;
  const canWrite = useCanWrite("audience");
  const exporting = useSubmit();
  const changing = useSubmit();
  const [asking, setAsking] = useState<"unsubscribe" | "erase" | undefined>();
  const exportData = () =>
    exporting.run(async () => {
      const data = await ok(api.GET("/api/v1/subscribers/{id}/export", { params: { path: { id: s.id } } }));
      saveFile(`subscriber-${s.id}.json`, JSON.stringify(data, null, 2), "application/json");
      notify(t("subscribers.exported"));
    });
  const unsubscribe = async () => {
    const updated = await changing.run(() => ok(api.PATCH("/api/v1/subscribers/{id}", { params: { path: { id: s.id } }, body: { status: "unsubscribed" } })));
    setAsking(undefined);
    if (!updated) return;
    props.handle.set(updated);
    notify(t("subscribers.unsubscribed"));
  };
  const erase = async () => {
    const done = await changing.run(async () => (await ok(api.DELETE("/api/v1/subscribers/{id}", { params: { path: { id: s.id } } })), true));
    setAsking(undefined);
    if (!done) return;
    notify(t("subscribers.erased", { email: s.email }));
    // Asked again, the API says it is gone: the page shows that (404).
    props.handle.reload();
  };
  return (
    <>
      <Button onClick={exportData} busy={exporting.busy}>
        {t("subscribers.exportData")}
      </Button>
      {canWrite && s.status !== "unsubscribed" ? <Button onClick={() => setAsking("unsubscribe")}>{t("subscribers.unsubscribe")}</Button> : null}
      {canWrite ? (
        <Button variant="danger" onClick={() => setAsking("erase")}>
          {t("subscribers.erase")}
        </Button>
      ) : null}
      {exporting.problem || changing.problem ? (
        <div class="page-problem">
          <FormProblem problem={exporting.problem ?? changing.problem} />
        </div>
      ) : null}
      <ConfirmDialog
        open={asking === "unsubscribe"}
        title={t("subscribers.unsubscribeTitle")}
        confirmLabel={t("subscribers.unsubscribe")}
        busy={changing.busy}
        onConfirm={unsubscribe}
        onCancel={() => setAsking(undefined)}
      >
        <p>{t("subscribers.unsubscribeConfirm", { email: s.email })}</p>
      </ConfirmDialog>
      <ConfirmDialog
        open={asking === "erase"}
        title={t("subscribers.eraseTitle")}
        confirmLabel={t("subscribers.erase")}
        danger
        busy={changing.busy}
        confirmText={s.email}
        onConfirm={erase}
        onCancel={() => setAsking(undefined)}
      >
        <p>{t("subscribers.eraseConfirm")}</p>
      </ConfirmDialog>
    </>
  );
}

/** Status, language, dates; writers change the address and the language. */
function Profile(props: { subscriber: Subscriber; handle: Handle }) {
  const s = props.subscriber;
  const canWrite = useCanWrite("audience");
  const submit = useSubmit();
  const p = submit.problem;
  const save = (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const email = formValue(form, "email").trim();
    const locale = formValue(form, "locale");
    const body = {
      ...(email !== s.email ? { email } : {}),
      ...(locale !== (s.locale ?? "") ? { locale: (locale || null) as (typeof SUBSCRIBER_LOCALES)[number] | null } : {}),
    };
    if (Object.keys(body).length === 0) return;
    void submit.run(async () => {
      props.handle.set(await ok(api.PATCH("/api/v1/subscribers/{id}", { params: { path: { id: s.id } }, body })));
      notify(t("subscribers.saved"));
    });
  };
  return (
    <Section title={t("subscribers.profile")}>
      <dl class="facts">
        <dt>{t("subscribers.status")}</dt>
        <dd>
          <StatusBadge status={s.status} />
        </dd>
        <dt>{t("subscribers.locale")}</dt>
        <dd>{s.locale ? t(`subscribers.locale.${s.locale}`) : t("subscribers.noLocale")}</dd>
        <dt>{t("subscribers.created")}</dt>
        <dd>{formatDateTime(s.created_at)}</dd>
        <dt>{t("subscribers.updated")}</dt>
        <dd>{formatDateTime(s.updated_at)}</dd>
      </dl>
      {canWrite ? (
        <form class="form" onSubmit={save} noValidate key={s.updated_at}>
          <FormProblem problem={p} />
          <Field label={t("field.email")} error={p?.field("email")}>
            <input name="email" type="email" defaultValue={s.email} autoComplete="off" />
          </Field>
          <Field label={t("subscribers.locale")} error={p?.field("locale")}>
            {/* A select has no default value in the DOM: the stored one is the option selected at first. */}
            <select name="locale">
              <option value="" selected={!s.locale}>
                {t("subscribers.noLocale")}
              </option>
              {SUBSCRIBER_LOCALES.map((l) => (
                <option key={l} value={l} selected={l === s.locale}>
                  {t(`subscribers.locale.${l}`)}
                </option>
              ))}
            </select>
          </Field>
          <Button type="submit" busy={submit.busy}>
            {submitLabel(submit.busy, t("subscribers.saveProfile"))}
          </Button>
        </form>
      ) : null}
    </Section>
  );
}

function Tags(props: { subscriber: Subscriber; handle: Handle }) {
  const s = props.subscriber;
  const canWrite = useCanWrite("audience");
  const submit = useSubmit();
  const add = (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const tags = tagList(formValue(form, "tags"));
    if (tags.length === 0) return;
    void submit.run(async () => {
      props.handle.set(await ok(api.POST("/api/v1/subscribers/{id}/tags", { params: { path: { id: s.id } }, body: { tags } })));
      form.reset();
      notify(t("subscribers.tagsAdded"));
    });
  };
  const remove = (name: string) =>
    submit.run(async () => {
      props.handle.set(await ok(api.DELETE("/api/v1/subscribers/{id}/tags/{tag_name}", { params: { path: { id: s.id, tag_name: name } } })));
      notify(t("subscribers.tagRemoved", { tag: name }));
    });
  return (
    <Section title={t("subscribers.tags")}>
      <FormProblem problem={submit.problem} />
      {s.tags.length === 0 ? (
        <p class="empty">{t("subscribers.noTags")}</p>
      ) : (
        <ul class="tag-list">
          {s.tags.map((name) => (
            <li key={name}>
              <a href={href("/subscribers", { tag: name })}>{name}</a>
              {canWrite ? (
                <Button class="button-small" onClick={() => void remove(name)} disabled={submit.busy} aria-label={t("subscribers.removeTag", { tag: name })}>
                  {t("subscribers.remove")}
                </Button>
              ) : null}
            </li>
          ))}
        </ul>
      )}
      {canWrite ? (
        <form class="toolbar" onSubmit={add}>
          <Field label={t("subscribers.addTags")} hint={t("subscribers.tagsHint")}>
            <input name="tags" autoComplete="off" />
          </Field>
          <Button type="submit" busy={submit.busy}>
            {t("subscribers.addTagsSubmit")}
          </Button>
        </form>
      ) : null}
    </Section>
  );
}

/** The metadata as rows; saving sends what changed (a removed key as null: the API merges). */
function Metadata(props: { subscriber: Subscriber; handle: Handle }) {
  const s = props.subscriber;
  const canWrite = useCanWrite("audience");
  const submit = useSubmit();
  const [rows, setRows] = useState<MetadataRow[]>(() => metadataRows(s.metadata));
  const save = (e: Event) => {
    e.preventDefault();
    const changes: Record<string, string | number | boolean | null> = {};
    const kept = new Set<string>();
    for (const row of rows) {
      const key = row.key.trim();
      if (!key) continue;
      kept.add(key);
      if (!(key in s.metadata) || String(s.metadata[key]) !== row.value) changes[key] = metadataValue(row.value);
    }
    for (const key of Object.keys(s.metadata)) if (!kept.has(key)) changes[key] = null;
    if (Object.keys(changes).length === 0) return;
    void submit.run(async () => {
      props.handle.set(await ok(api.PATCH("/api/v1/subscribers/{id}", { params: { path: { id: s.id } }, body: { metadata: changes } })));
      notify(t("subscribers.saved"));
    });
  };
  return (
    <Section title={t("subscribers.metadata")}>
      <form class="form" onSubmit={save} noValidate>
        <FormProblem problem={submit.problem} />
        <MetadataEditor rows={rows} onChange={setRows} disabled={!canWrite} />
        {canWrite ? (
          <Button type="submit" variant="primary" busy={submit.busy}>
            {submitLabel(submit.busy, t("subscribers.saveMetadata"))}
          </Button>
        ) : null}
      </form>
    </Section>
  );
}

/** The audit trail, oldest first as the API gives it; reloaded after each change of the subscriber. */
function Trail(props: { id: string; updatedAt: string }) {
  const { handle, more, loadMore } = usePaged(
    (cursor) => ok(api.GET("/api/v1/subscribers/{id}/events", { params: { path: { id: props.id }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } })),
    [props.id, props.updatedAt],
  );
  return (
    <Section title={t("subscribers.trail")}>
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("subscribers.trailEmpty")}>
        {(data) => (
          <>
            <TableWrap label={t("subscribers.trailTable")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("subscribers.trailWhen")}</th>
                    <th scope="col">{t("subscribers.trailWhat")}</th>
                    <th scope="col">{t("subscribers.trailWho")}</th>
                    <th scope="col">{t("subscribers.trailHow")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((e) => (
                    <tr key={e.id}>
                      <td>{formatDateTime(e.occurred_at)}</td>
                      <td>
                        <code>{e.type}</code> {describe(e.data)}
                      </td>
                      <td>{e.actor}</td>
                      <td>{e.source ?? ""}</td>
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

/** A trail entry's data in a line (tag names, statuses, reasons: never personal data, the API holds none here). */
function describe(data: Record<string, unknown>): string {
  return Object.entries(data)
    .filter(([, v]) => typeof v === "string" || typeof v === "number" || typeof v === "boolean")
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(", ");
}
