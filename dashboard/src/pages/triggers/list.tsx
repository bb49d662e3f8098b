import { api, ok } from "../../api/client";
import { formatDateTime, t } from "../../i18n";
import { Badge, fetchAll, Loadable, LoadMore, Page, TableWrap, useLoad, usePaged } from "../../kit";
import { href } from "../../router";
import { useCanWrite } from "../../session";
import { formatDelay } from "./delay";

export default function Triggers() {
  const canWrite = useCanWrite("campaigns");
  const { handle, more, loadMore } = usePaged(async (cursor) => ok(api.GET("/api/v1/triggers", { params: { query: { limit: 50, cursor } } })), []);
  // Template names for the table; a trigger whose template is gone shows its id.
  const templates = useLoad(async () => {
    const all = await fetchAll((cursor) => ok(api.GET("/api/v1/templates", { params: { query: { limit: 500, cursor } } })));
    return new Map(all.map((tpl) => [tpl.id, tpl.name]));
  }, []);
  const names = templates.result.state === "ready" ? templates.result.data : new Map<string, string>();
  return (
    <Page
      title={t("triggers.title")}
      description={t("triggers.intro")}
      actions={
        canWrite ? (
          <a class="button button-primary" href={href("/triggers/new")}>
            {t("triggers.new")}
          </a>
        ) : null
      }
    >
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("triggers.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("triggers.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("triggers.eventType")}</th>
                    <th scope="col">{t("triggers.template")}</th>
                    <th scope="col">{t("triggers.delay")}</th>
                    <th scope="col">{t("triggers.state")}</th>
                    <th scope="col">{t("triggers.lastFailure")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((tr) => (
                    <tr key={tr.id}>
                      <td>
                        <a href={href(`/triggers/${tr.id}`)}>
                          <code>{tr.event_type}</code>
                          {tr.tag ? ` (${tr.tag})` : null}
                        </a>
                        {tr.description ? <div class="hint">{tr.description}</div> : null}
                      </td>
                      <td>{names.get(tr.template_id) ?? tr.template_id}</td>
                      <td>{formatDelay(tr.delay_seconds)}</td>
                      <td>
                        <Badge tone={tr.is_active ? "good" : "neutral"}>{t(tr.is_active ? "triggers.on" : "triggers.off")}</Badge>
                        {tr.disabled_reason ? <div class="hint">{t("triggers.disabledTemplateDeleted")}</div> : null}
                      </td>
                      <td>{tr.last_failure ? `${tr.last_failure.reason} (${formatDateTime(tr.last_failure.at)})` : "–"}</td>
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
