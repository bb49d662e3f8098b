import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { components } from "../api/schema";
import { formatDateTime, t } from "../i18n";
import { Badge, Button, ConfirmDialog, Field, FormProblem, formValue, LoadMore, Loadable, notify, Page, Section, submitLabel, TableWrap, usePaged, useSubmit } from "../kit";
import { setQuery, useLocation } from "../router";
import { useCanWrite } from "../session";

type Suppression = components["schemas"]["Suppression"];
type Reason = components["schemas"]["SuppressionReason"];

const REASONS: readonly Reason[] = ["hard_bounce", "complaint", "unsubscribed", "manual", "erased"];
const REASON_TONES = { hard_bounce: "bad", complaint: "bad", unsubscribed: "neutral", manual: "info", erased: "neutral" } as const;

function asReason(value: string | null): Reason | undefined {
  return REASONS.find((r) => r === value);
}

/**
 * /suppressions: the addresses the account does not mail, with why and who
 * added them; search one address, filter by reason (both kept in the query),
 * add an address by hand, remove one (with the reason the API keeps).
 */
export default function Suppressions() {
  const loc = useLocation();
  const canWrite = useCanWrite("audience");
  const email = loc.query.get("email") ?? "";
  const reason = asReason(loc.query.get("reason"));
  const [removing, setRemoving] = useState<Suppression | undefined>();
  const { handle, more, loadMore } = usePaged<Suppression>(
    async (cursor) =>
      ok(api.GET("/api/v1/suppressions", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}), ...(reason ? { reason } : {}), ...(email ? { email } : {}) } } })),
    [email, reason],
  );

  const onSearch = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setQuery({ email: formValue(form, "email").trim(), reason: formValue(form, "reason") });
  };
  const filtered = email !== "" || reason !== undefined;

  return (
    <Page title={t("suppressions.title")} description={t("suppressions.description")}>
      {canWrite ? <AddSuppression onAdded={handle.reload} /> : null}
      {/* Keyed by the query: a cleared or shared search shows its own values. */}
      <form key={`${email}|${reason ?? ""}`} class="toolbar" role="search" onSubmit={onSearch} aria-label={t("suppressions.search")}>
        <Field label={t("suppressions.searchEmail")}>
          <input name="email" type="email" defaultValue={email} autoComplete="off" spellcheck={false} />
        </Field>
        <Field label={t("suppressions.col.reason")}>
          <select name="reason" defaultValue={reason ?? ""}>
            <option value="">{t("suppressions.anyReason")}</option>
            {REASONS.map((r) => (
              <option key={r} value={r}>
                {t(`suppressions.reason.${r}`)}
              </option>
            ))}
          </select>
        </Field>
        <Button type="submit">{t("suppressions.searchSubmit")}</Button>
        {filtered ? (
          <Button variant="plain" onClick={() => setQuery({ email: undefined, reason: undefined })}>
            {t("suppressions.clear")}
          </Button>
        ) : null}
      </form>
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={filtered ? t("suppressions.noMatch") : t("suppressions.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("suppressions.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("suppressions.col.email")}</th>
                    <th scope="col">{t("suppressions.col.reason")}</th>
                    <th scope="col">{t("suppressions.col.source")}</th>
                    <th scope="col">{t("suppressions.col.created")}</th>
                    {canWrite ? (
                      <th scope="col">
                        <span class="visually-hidden">{t("suppressions.col.actions")}</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((s) => (
                    <tr key={s.id}>
                      <td class="mono">{s.email ?? <em>{t("suppressions.erasedAddress")}</em>}</td>
                      <td>
                        <Badge tone={REASON_TONES[s.reason]}>{t(`suppressions.reason.${s.reason}`)}</Badge>
                      </td>
                      <td>{sourceLabel(s.source)}</td>
                      <td>{formatDateTime(s.created_at)}</td>
                      {canWrite ? (
                        <td>
                          {s.email ? (
                            <Button class="button-small" onClick={() => setRemoving(s)} aria-label={t("suppressions.removeOne", { email: s.email })}>
                              {t("suppressions.remove")}
                            </Button>
                          ) : null}
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
      <RemoveDialog
        entry={removing}
        onDone={(removed) => {
          setRemoving(undefined);
          if (removed) handle.reload();
        }}
      />
    </Page>
  );
}

function sourceLabel(source: string): string {
  if (source === "api" || source === "delivery" || source === "erasure") return t(`suppressions.source.${source}`);
  return source;
}

function AddSuppression(props: { onAdded: () => void }) {
  const submit = useSubmit();
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const email = formValue(form, "email").trim();
    const added = await submit.run(async () => {
      const answer = api.POST("/api/v1/suppressions", { body: { email, reason: "manual" } });
      const entry = await ok(answer);
      // 201: added now; 200: it was on the list already (its entry unchanged).
      return { entry, created: (await answer).response.status === 201 };
    });
    if (!added) return;
    notify(added.created ? t("suppressions.added", { email }) : t("suppressions.alreadyListed", { email }));
    form.reset();
    props.onAdded();
  };
  return (
    <Section title={t("suppressions.add")}>
      <p>{t("suppressions.addIntro")}</p>
      <form onSubmit={onSubmit} class="toolbar">
        <Field label={t("suppressions.col.email")} error={submit.problem?.field("email")}>
          <input name="email" type="email" required autoComplete="off" spellcheck={false} />
        </Field>
        <Button type="submit" variant="primary" busy={submit.busy}>
          {submitLabel(submit.busy, t("suppressions.addSubmit"))}
        </Button>
      </form>
      <FormProblem problem={submit.problem} />
    </Section>
  );
}

/** Asks why the address may be mailed again (the API keeps the reason in the audit trail), then removes it. */
function RemoveDialog(props: { entry: Suppression | undefined; onDone: (removed: boolean) => void }) {
  const submit = useSubmit();
  const [why, setWhy] = useState("");
  const email = props.entry?.email ?? "";
  const confirm = async () => {
    const removed = await submit.run(() => ok(api.DELETE("/api/v1/suppressions/{email}", { params: { path: { email }, query: { reason: why.trim() } } })));
    if (!removed) return;
    setWhy("");
    notify(t("suppressions.removed", { email }));
    props.onDone(true);
  };
  return (
    <ConfirmDialog
      open={props.entry !== undefined}
      title={t("suppressions.removeTitle", { email })}
      confirmLabel={t("suppressions.remove")}
      danger
      busy={submit.busy}
      disabled={why.trim() === ""}
      onConfirm={confirm}
      onCancel={() => {
        submit.setProblem(undefined);
        props.onDone(false);
      }}
    >
      <p>{t("suppressions.removeConfirm")}</p>
      <Field label={t("suppressions.removeReason")} hint={t("suppressions.removeReasonHint")} error={submit.problem?.field("reason")}>
        <input value={why} maxLength={500} onInput={(e) => setWhy(e.currentTarget.value)} autoComplete="off" />
      </Field>
      <FormProblem problem={submit.problem} />
    </ConfirmDialog>
  );
}
