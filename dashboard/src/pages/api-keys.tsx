import { useEffect, useRef, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { components } from "../api/schema";
import { formatDateTime, t } from "../i18n";
import { Badge, Button, ConfirmDialog, CopyButton, Field, FormProblem, formValue, LoadMore, Loadable, notify, Page, Section, submitLabel, TableWrap, usePaged, useSubmit } from "../kit";
import { useCanWrite } from "../session";

type Key = components["schemas"]["ApiKey"];
type CreatedKey = components["schemas"]["ApiKeyCreated"];

/**
 * The account's API keys: create one for live or test (the key shown once,
 * here, with a copy button: the platform keeps only its hash), the list
 * masked, revoke with a confirmation.
 */
export default function ApiKeys() {
  const canWrite = useCanWrite("keys");
  const { handle, more, loadMore } = usePaged(
    (cursor) => ok(api.GET("/api/v1/api-keys", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })),
    [],
  );
  const [created, setCreated] = useState<CreatedKey | undefined>();
  const [revoking, setRevoking] = useState<Key | undefined>();
  const create = useSubmit();
  const revoke = useSubmit();
  const createdHeading = useRef<HTMLHeadingElement>(null);
  // The new key is what the member came for: the focus goes to it (a screen reader reads it out).
  useEffect(() => {
    if (created) createdHeading.current?.focus();
  }, [created]);

  const onCreate = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const name = formValue(form, "name").trim();
    const mode = formValue(form, "mode") === "test" ? "test" : "live";
    const key = await create.run(() => ok(api.POST("/api/v1/api-keys", { body: { mode, ...(name ? { name } : {}) } })));
    if (!key) return;
    form.reset();
    setCreated(key);
    handle.reload();
  };
  const onRevoke = async () => {
    const key = revoking;
    if (!key) return;
    const done = await revoke.run(async () => (await ok(api.DELETE("/api/v1/api-keys/{id}", { params: { path: { id: key.id } } })), true));
    setRevoking(undefined);
    if (!done) return;
    notify(t("apiKeys.revoked", { key: key.masked }));
    handle.reload();
  };

  return (
    <Page title={t("apiKeys.title")} description={t("apiKeys.intro")}>
      {created ? (
        <section class="card alert-success" aria-labelledby="new-key-title">
          <h2 id="new-key-title" tabIndex={-1} ref={createdHeading}>
            {t("apiKeys.createdTitle")}
          </h2>
          <p>
            <strong>{t("apiKeys.onceWarning")}</strong>
          </p>
          <code class="secret" aria-label={t("apiKeys.newKey")}>
            {created.key}
          </code>
          <div class="page-actions secret-actions">
            <CopyButton text={created.key} label={t("apiKeys.copy")} />
            <Button onClick={() => setCreated(undefined)}>{t("apiKeys.done")}</Button>
          </div>
        </section>
      ) : null}
      {canWrite ? (
        <Section title={t("apiKeys.createTitle")}>
          <form onSubmit={onCreate} class="toolbar">
            <Field label={t("apiKeys.name")} hint={t("apiKeys.nameHint")} error={create.problem?.field("name")}>
              <input name="name" maxLength={200} autoComplete="off" />
            </Field>
            <Field label={t("apiKeys.mode")} error={create.problem?.field("mode")}>
              <select name="mode">
                <option value="live">{t("apiKeys.mode.live")}</option>
                <option value="test">{t("apiKeys.mode.test")}</option>
              </select>
            </Field>
            <Button type="submit" variant="primary" busy={create.busy}>
              {submitLabel(create.busy, t("apiKeys.create"))}
            </Button>
          </form>
          <FormProblem problem={create.problem} />
        </Section>
      ) : null}
      <Section title={t("apiKeys.listTitle")}>
        <FormProblem problem={revoke.problem} />
        <Loadable handle={handle} isEmpty={(data) => data.items.length === 0} empty={t("apiKeys.empty")}>
          {(data) => (
            <>
              <TableWrap label={t("apiKeys.listTitle")}>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">{t("apiKeys.name")}</th>
                      <th scope="col">{t("apiKeys.key")}</th>
                      <th scope="col">{t("apiKeys.mode")}</th>
                      <th scope="col">{t("apiKeys.created")}</th>
                      <th scope="col">{t("apiKeys.state")}</th>
                      {canWrite ? <th scope="col">{t("apiKeys.actions")}</th> : null}
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((key) => (
                      <tr key={key.id}>
                        <td>{key.name ?? <span class="hint">{t("apiKeys.unnamed")}</span>}</td>
                        <td>
                          <code>{key.masked}</code>
                        </td>
                        <td>{t(`apiKeys.mode.${key.mode}`)}</td>
                        <td>{formatDateTime(key.created_at)}</td>
                        <td>{key.revoked_at ? <Badge tone="bad">{t("apiKeys.revokedAt", { at: formatDateTime(key.revoked_at) })}</Badge> : <Badge tone="good">{t("apiKeys.active")}</Badge>}</td>
                        {canWrite ? (
                          <td>
                            {key.revoked_at ? null : (
                              <Button class="button-small" variant="danger" onClick={() => setRevoking(key)} aria-label={t("apiKeys.revokeLabel", { key: key.name ?? key.masked })}>
                                {t("apiKeys.revoke")}
                              </Button>
                            )}
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
      </Section>
      <ConfirmDialog
        open={revoking !== undefined}
        title={t("apiKeys.revokeTitle")}
        confirmLabel={t("apiKeys.revoke")}
        danger
        busy={revoke.busy}
        onConfirm={onRevoke}
        onCancel={() => setRevoking(undefined)}
      >
        <p>{t("apiKeys.revokeText", { key: revoking?.masked ?? "" })}</p>
      </ConfirmDialog>
    </Page>
  );
}
