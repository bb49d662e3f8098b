import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Button, Field, FormProblem, formValue, LoadMore, Loadable, Page, Section, submitLabel, TableWrap, usePaged, useSubmit } from "../../kit";
import { href, navigate } from "../../router";
import { useCanWrite } from "../../session";
import { DomainStatus } from "./status";

type SenderDomain = components["schemas"]["SenderDomain"];

/** /sending-domains: the account's sending domains (in the mode shown) with their state; add one. */
export default function SendingDomains() {
  const canWrite = useCanWrite("domains");
  const { handle, more, loadMore } = usePaged<SenderDomain>(
    async (cursor) => ok(api.GET("/api/v1/domains", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })),
    [],
  );
  return (
    <Page title={t("domains.title")} description={t("domains.description")}>
      {canWrite ? <AddDomain /> : null}
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("domains.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("domains.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("domains.col.name")}</th>
                    <th scope="col">{t("domains.col.status")}</th>
                    <th scope="col">{t("domains.col.created")}</th>
                    <th scope="col">{t("domains.col.checked")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((d) => (
                    <tr key={d.id}>
                      <td>
                        <a href={href(`/sending-domains/${encodeURIComponent(d.id)}`)}>{d.name}</a>
                      </td>
                      <td>
                        <DomainStatus status={d.status} />
                      </td>
                      <td>{formatDateTime(d.created_at)}</td>
                      <td>{d.last_checked_at ? formatDateTime(d.last_checked_at) : t("domains.neverChecked")}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
            <LoadMore next={data.next} more={more} onClick={loadMore} />
          </>
        )}
      </Loadable>
    </Page>
  );
}

function AddDomain() {
  const submit = useSubmit();
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const created = await submit.run(() => ok(api.POST("/api/v1/domains", { body: { name: formValue(form, "name").trim() } })));
    // The records to publish are the next step: the domain's own page shows them.
    if (created) navigate(`/sending-domains/${encodeURIComponent(created.id)}`);
  };
  return (
    <Section title={t("domains.add")}>
      <form onSubmit={onSubmit} class="toolbar">
        <Field label={t("domains.field.name")} hint={t("domains.field.nameHint")} error={submit.problem?.field("name")}>
          <input name="name" type="text" required maxLength={300} autoComplete="off" spellcheck={false} inputMode="url" />
        </Field>
        <Button type="submit" variant="primary" busy={submit.busy}>
          {submitLabel(submit.busy, t("domains.addSubmit"))}
        </Button>
      </form>
      <FormProblem problem={submit.problem} />
    </Section>
  );
}
