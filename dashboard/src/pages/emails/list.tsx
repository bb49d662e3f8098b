import { api, ok } from "../../api/client";
import { t } from "../../i18n";
import { Field, Loadable, LoadMore, Page, usePaged } from "../../kit";
import { href, setQuery, useLocation } from "../../router";
import { EMAIL_STATUSES, type EmailStatus } from "./status";
import { EmailTable } from "./table";

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
            <EmailTable label={t("emails.title")} emails={data.items} columns={["queued", "to", "template", "status", "reason"]} />
            <LoadMore next={data.next} more={more} onClick={loadMore} />
          </>
        )}
      </Loadable>
    </Page>
  );
}
