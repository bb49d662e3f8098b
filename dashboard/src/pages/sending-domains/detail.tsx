import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Button, ConfirmDialog, CopyButton, FormProblem, Loadable, notify, Page, Section, submitLabel, TableWrap, useLoad, usePoll, useSubmit } from "../../kit";
import type { PageProps } from "../../routes";
import { href, navigate } from "../../router";
import { useCanWrite } from "../../session";
import { DomainStatus, RecordStatus } from "./status";

type SenderDomain = components["schemas"]["SenderDomain"];
type DnsRecord = components["schemas"]["SenderDnsRecord"];

/** /sending-domains/:id: the DNS records to publish, what the last check found for each, "Verify now", delete. */
export default function SendingDomain(props: PageProps) {
  const id = props.params.id ?? "";
  const handle = useLoad(() => ok(api.GET("/api/v1/domains/{id}", { params: { path: { id } } })), [id]);
  // A pending domain is checked again by the platform on its own (a minute after it was added, then less often): its page follows.
  usePoll(handle.result.state === "ready" && handle.result.data.status === "pending", 15_000, handle.reload);
  const title = handle.result.state === "ready" ? handle.result.data.name : t("domains.detailTitle");
  return (
    <Page title={title} description={<a href={href("/sending-domains")}>{t("domains.back")}</a>}>
      <Loadable handle={handle}>{(domain) => <DomainView domain={domain} onChange={handle.set} />}</Loadable>
    </Page>
  );
}

function DomainView(props: { domain: SenderDomain; onChange: (d: SenderDomain) => void }) {
  const { domain } = props;
  const canWrite = useCanWrite("domains");
  const verify = useSubmit();
  const remove = useSubmit();
  const [asking, setAsking] = useState(false);

  const verifyNow = async () => {
    const checked = await verify.run(() => ok(api.POST("/api/v1/domains/{id}/verify", { params: { path: { id: domain.id } } })));
    if (!checked) return;
    props.onChange(checked);
    notify(t(`domains.checked.${checked.status}`));
  };
  const deleteDomain = async () => {
    const done = await remove.run(async () => (await ok(api.DELETE("/api/v1/domains/{id}", { params: { path: { id: domain.id } } })), true));
    setAsking(false);
    if (!done) return;
    notify(t("domains.deleted", { name: domain.name }));
    navigate("/sending-domains");
  };

  return (
    <>
      <Section
        title={t("domains.state")}
        actions={
          canWrite ? (
            <Button variant="primary" busy={verify.busy} onClick={verifyNow}>
              {submitLabel(verify.busy, t("domains.verify"))}
            </Button>
          ) : null
        }
      >
        <dl class="facts">
          <dt>{t("domains.col.status")}</dt>
          <dd>
            <DomainStatus status={domain.status} />
          </dd>
          <dt>{t("domains.col.created")}</dt>
          <dd>{formatDateTime(domain.created_at)}</dd>
          <dt>{t("domains.verifiedAt")}</dt>
          <dd>{domain.verified_at ? formatDateTime(domain.verified_at) : t("domains.notYet")}</dd>
          <dt>{t("domains.col.checked")}</dt>
          <dd>{domain.last_checked_at ? formatDateTime(domain.last_checked_at) : t("domains.neverChecked")}</dd>
          <dt>{t("domains.nextCheck")}</dt>
          <dd>{domain.next_check_at ? formatDateTime(domain.next_check_at) : t("domains.noNextCheck")}</dd>
        </dl>
        {domain.failure_reason ? (
          <p class={`alert ${domain.status === "failed" ? "alert-error" : "alert-warn"}`}>
            <strong>{t("domains.failureReason")}</strong> {domain.failure_reason}
          </p>
        ) : null}
        <FormProblem problem={verify.problem} />
      </Section>

      <Section title={t("domains.records")}>
        <p>{t("domains.recordsIntro")}</p>
        <TableWrap label={t("domains.recordsTable")}>
          <table>
            <thead>
              <tr>
                <th scope="col">{t("domains.record.purpose")}</th>
                <th scope="col">{t("domains.record.type")}</th>
                <th scope="col">{t("domains.record.name")}</th>
                <th scope="col">{t("domains.record.value")}</th>
                <th scope="col">{t("domains.record.state")}</th>
              </tr>
            </thead>
            <tbody>
              {domain.records.map((r) => (
                <RecordRow key={`${r.purpose}-${r.name}`} record={r} />
              ))}
            </tbody>
          </table>
        </TableWrap>
      </Section>

      {canWrite ? (
        <Section title={t("domains.delete")}>
          <p>{t("domains.deleteIntro")}</p>
          <FormProblem problem={remove.problem} />
          <Button variant="danger" onClick={() => setAsking(true)}>
            {t("domains.delete")}
          </Button>
        </Section>
      ) : null}
      <ConfirmDialog
        open={asking}
        title={t("domains.deleteTitle", { name: domain.name })}
        confirmLabel={t("domains.delete")}
        danger
        busy={remove.busy}
        confirmText={domain.name}
        onConfirm={deleteDomain}
        onCancel={() => setAsking(false)}
      >
        <p>{t("domains.deleteConfirm")}</p>
      </ConfirmDialog>
    </>
  );
}

function RecordRow(props: { record: DnsRecord }) {
  const r = props.record;
  const purpose = t(`domains.purpose.${r.purpose}`);
  return (
    <tr>
      <th scope="row">
        {purpose}
        <br />
        <span class="hint">{r.required ? t("domains.record.required") : t("domains.record.optional")}</span>
      </th>
      <td>{r.type}</td>
      <td>
        <code class="record-text">{r.name}</code> <CopyButton text={r.name} what={t("domains.copyName", { purpose })} />
      </td>
      <td>
        <code class="record-text">{r.value}</code> <CopyButton text={r.value} what={t("domains.copyValue", { purpose })} />
      </td>
      <td>
        <RecordStatus status={r.status} />
        {r.status === "mismatch" && r.found.length > 0 ? (
          <p class="hint">
            {t("domains.record.found")} <code class="record-text">{r.found.join(" | ")}</code>
          </p>
        ) : null}
      </td>
    </tr>
  );
}
