import { api, ok } from "../../api/client";
import { formatDateTime, t } from "../../i18n";
import { Badge, Loadable, LoadMore, Page, TableWrap, usePaged } from "../../kit";
import { href } from "../../router";
import { useCanWrite } from "../../session";

export default function Templates() {
  const canWrite = useCanWrite("templates");
  const { handle, more, loadMore } = usePaged(
    async (cursor) => ok(api.GET("/api/v1/templates", { params: { query: { limit: 50, cursor } } })),
    [],
  );
  return (
    <Page
      title={t("templates.title")}
      description={t("templates.intro")}
      actions={
        canWrite ? (
          <a class="button button-primary" href={href("/templates/new")}>
            {t("templates.new")}
          </a>
        ) : null
      }
    >
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("templates.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("templates.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("templates.name")}</th>
                    <th scope="col">{t("templates.slug")}</th>
                    <th scope="col">{t("templates.category")}</th>
                    <th scope="col" class="num">
                      {t("templates.version")}
                    </th>
                    <th scope="col">{t("templates.updated")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((tpl) => (
                    <tr key={tpl.id}>
                      <td>
                        <a href={href(`/templates/${tpl.id}`)}>{tpl.name}</a>
                      </td>
                      <td>
                        <code>{tpl.slug}</code>
                      </td>
                      <td>
                        <Badge tone={tpl.category === "marketing" ? "info" : "neutral"}>{t(`templates.category.${tpl.category}`)}</Badge>
                      </td>
                      <td class="num">{tpl.version}</td>
                      <td>{formatDateTime(tpl.updated_at)}</td>
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
