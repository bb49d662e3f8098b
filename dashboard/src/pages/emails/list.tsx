import { api, ok } from "../../api/client";
import { formatDateTime, t } from "../../i18n";
import { Field, Loadable, LoadMore, Page, TableWrap, usePaged } from "../../kit";
import { href, setQuery, useLocation } from "../../router";
import { EMAIL_STATUSES, EmailStatusBadge, type EmailStatus } from "./status";

export default function Emails() {
  const loc = useLocation();
  const wanted = loc.query.get("status") ?? "";
  const status = (EMAIL_STATUSES as readonly string[]).includes(wanted) ? (wanted as EmailStatus) : undefined;
  const campaignId = loc.query.get("campaign_id") || undefined;
  const { handle, more, loadMore } = usePaged(
    async (cursor) => ok(api.GET("/api/v1/emails", { params: { query: { limit: 50, cursor, status, campaign_id: campaignId } } })),
    [status, campaignId],
  );
  return (
    <Page title={t("emails.title")} description={t("emails.intro")}>
      <div class="toolbar">
        <Field label={t("emails.filterStatus")}>
          <select value={status ?? ""} onChange={(e) => setQuery({ status: e.currentTarget.value })}>
            <option value="">{t("emails.allStatuses")}</option>
            {EMAIL_STATUSES.map((s) => (
              <option key={s} value={s}>
                {t(`emails.status.${s}`)}
              </option>
            ))}
          </select>
        </Field>
        {campaignId ? (
          <p>
            {t("emails.ofCampaign")} <a href={href(`/campaigns/${campaignId}`)}>{campaignId}</a>{" "}
            <button type="button" class="button button-small" onClick={() => setQuery({ campaign_id: undefined })}>
              {t("emails.allCampaigns")}
            </button>
          </p>
        ) : null}
      </div>
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={status ? t("emails.emptyStatus") : t("emails.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("emails.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("emails.queuedAt")}</th>
                    <th scope="col">{t("emails.to")}</th>
                    <th scope="col">{t("emails.template")}</th>
                    <th scope="col">{t("emails.statusLabel")}</th>
                    <th scope="col">{t("emails.reason")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((e) => (
                    <tr key={e.id}>
                      <td>
                        <a href={href(`/emails/${e.id}`)}>{formatDateTime(e.queued_at)}</a>
                      </td>
                      <td>{e.to ?? <em>{t("emails.erased")}</em>}</td>
                      <td>
                        <code>{e.template_slug}</code>
                      </td>
                      <td>
                        <EmailStatusBadge status={e.status} />
                      </td>
                      <td>{e.error ? <code class="reason">{e.error}</code> : "–"}</td>
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
