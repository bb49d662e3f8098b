import { api, ok } from "../../api/client";
import { formatDateTime, formatNumber, t } from "../../i18n";
import { Loadable, LoadMore, Page, TableWrap, usePaged } from "../../kit";
import { href } from "../../router";
import { useCanWrite } from "../../session";
import { CampaignStatusBadge } from "./status";

export default function Campaigns() {
  const canWrite = useCanWrite("campaigns");
  const { handle, more, loadMore } = usePaged(async (cursor) => ok(api.GET("/api/v1/campaigns", { params: { query: { limit: 50, cursor } } })), []);
  return (
    <Page
      title={t("campaigns.title")}
      description={t("campaigns.intro")}
      actions={
        canWrite ? (
          <a class="button button-primary" href={href("/campaigns/new")}>
            {t("campaigns.new")}
          </a>
        ) : null
      }
    >
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("campaigns.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("campaigns.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("campaigns.name")}</th>
                    <th scope="col">{t("campaigns.statusLabel")}</th>
                    <th scope="col" class="num">
                      {t("campaigns.recipients")}
                    </th>
                    <th scope="col" class="num">
                      {t("campaigns.count.sent")}
                    </th>
                    <th scope="col">{t("campaigns.when")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((c) => (
                    <tr key={c.id}>
                      <td>
                        <a href={href(`/campaigns/${c.id}`)}>{c.name}</a>
                      </td>
                      <td>
                        <CampaignStatusBadge status={c.status} />
                      </td>
                      <td class="num">{c.total_recipients === null ? "–" : formatNumber(c.total_recipients)}</td>
                      <td class="num">{formatNumber(c.counts.sent)}</td>
                      <td>{formatDateTime(c.finished_at ?? c.started_at ?? c.send_at ?? c.created_at)}</td>
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
