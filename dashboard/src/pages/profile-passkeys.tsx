import { useState } from "preact/hooks";
import { listPasskeys, passkeysSupported, registerPasskey, removePasskey, type PasskeyItem } from "../api/passkeys";
import { formatDateTime, t } from "../i18n";
import { Button, ConfirmDialog, Field, FormProblem, formValue, Loadable, notify, Section, submitLabel, TableWrap, useLoad, useSubmit } from "../kit";

/** The profile's passkeys: add one of this device (named), the list with its last use, remove. */
export function PasskeysSection() {
  const handle = useLoad(listPasskeys, []);
  const add = useSubmit();
  const remove = useSubmit();
  const [removing, setRemoving] = useState<PasskeyItem | undefined>();
  const supported = passkeysSupported();

  const onAdd = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const name = formValue(form, "passkey-name").trim();
    const added = await add.run(() => registerPasskey(name));
    if (!added) return;
    form.reset();
    notify(t("passkeys.added", { name: added.name }));
    handle.reload();
  };
  const onRemove = async () => {
    const passkey = removing;
    if (!passkey) return;
    const done = await remove.run(async () => (await removePasskey(passkey.id), true));
    setRemoving(undefined);
    if (!done) return;
    notify(t("passkeys.removed", { name: passkey.name }));
    handle.reload();
  };

  return (
    <Section title={t("passkeys.title")}>
      <p>{t("passkeys.intro")}</p>
      {supported ? (
        <form onSubmit={onAdd} class="toolbar">
          <Field label={t("passkeys.name")} hint={t("passkeys.nameHint")} error={add.problem?.field("name")}>
            <input name="passkey-name" maxLength={100} autoComplete="off" required />
          </Field>
          <Button type="submit" variant="primary" busy={add.busy}>
            {submitLabel(add.busy, t("passkeys.add"))}
          </Button>
        </form>
      ) : (
        <p class="hint">{t("passkeys.unsupported")}</p>
      )}
      <FormProblem problem={add.problem} />
      <FormProblem problem={remove.problem} />
      <Loadable handle={handle} isEmpty={(data) => data.items.length === 0} empty={t("passkeys.empty")}>
        {(data) => (
          <TableWrap label={t("passkeys.title")}>
            <table>
              <thead>
                <tr>
                  <th scope="col">{t("passkeys.name")}</th>
                  <th scope="col">{t("passkeys.created")}</th>
                  <th scope="col">{t("passkeys.lastUsed")}</th>
                  <th scope="col">{t("passkeys.actions")}</th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((passkey) => (
                  <tr key={passkey.id}>
                    <td>{passkey.name}</td>
                    <td>{formatDateTime(passkey.created_at)}</td>
                    <td>{passkey.last_used_at ? formatDateTime(passkey.last_used_at) : <span class="hint">{t("passkeys.neverUsed")}</span>}</td>
                    <td>
                      <Button class="button-small" variant="danger" onClick={() => setRemoving(passkey)} aria-label={t("passkeys.removeLabel", { name: passkey.name })}>
                        {t("passkeys.remove")}
                      </Button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </Loadable>
      <ConfirmDialog open={removing !== undefined} title={t("passkeys.removeTitle")} confirmLabel={t("passkeys.remove")} danger busy={remove.busy} onConfirm={onRemove} onCancel={() => setRemoving(undefined)}>
        <p>{t("passkeys.removeText", { name: removing?.name ?? "" })}</p>
      </ConfirmDialog>
    </Section>
  );
}
