import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import { formatNumber, t } from "../../i18n";
import { Badge, Button, ConfirmDialog, FormProblem, LoadMore, Loadable, Page, TableWrap, notify, usePaged, useSubmit } from "../../kit";
import { href } from "../../router";
import { useCanWrite } from "../../session";
import type { Tag } from "./form";

export default function TagList() {
  const canWrite = useCanWrite("audience");
  const { handle, more, loadMore } = usePaged((cursor) => ok(api.GET("/api/v1/tags", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })), []);
  const [deleting, setDeleting] = useState<Tag | undefined>();
  const submit = useSubmit();
  const remove = async () => {
    const tag = deleting!;
    const done = await submit.run(async () => (await ok(api.DELETE("/api/v1/tags/{id}", { params: { path: { id: tag.id } } })), true));
    setDeleting(undefined);
    if (!done) return;
    notify(t("tags.deleted", { name: tag.name }));
    handle.reload();
  };
  return (
    <Page
      title={t("tags.title")}
      description={t("tags.intro")}
      actions={
        canWrite ? (
          <a class="button button-primary" href={href("/tags/new")}>
            {t("tags.new")}
          </a>
        ) : null
      }
    >
      <FormProblem problem={submit.problem} />
      <Loadable
        handle={handle}
        isEmpty={(d) => d.items.length === 0}
        empty={
          <>
            <p>{t("tags.none")}</p>
            {canWrite ? (
              <p>
                <a href={href("/tags/new")}>{t("tags.new")}</a>
              </p>
            ) : null}
          </>
        }
      >
        {(data) => (
          <>
            <TableWrap label={t("tags.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("tags.name")}</th>
                    <th scope="col">{t("tags.visibility")}</th>
                    <th scope="col">{t("tags.description")}</th>
                    <th scope="col">{t("tags.languages")}</th>
                    <th scope="col" class="num">
                      {t("tags.members")}
                    </th>
                    {canWrite ? (
                      <th scope="col">
                        <span class="visually-hidden">{t("tags.actions")}</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((tag) => (
                    <tr key={tag.id}>
                      <td>
                        <a href={href(`/tags/${tag.id}`)}>{tag.name}</a>
                      </td>
                      <td>{tag.is_public ? <Badge tone="info">{t("tags.isPublic")}</Badge> : <Badge>{t("tags.isPrivate")}</Badge>}</td>
                      <td>{tag.description}</td>
                      <td>{Object.keys(tag.translations).sort().join(", ")}</td>
                      <td class="num">
                        <a href={href("/subscribers", { tag: tag.name })} aria-label={t("tags.membersOf", { count: formatNumber(tag.subscriber_count), name: tag.name })}>
                          {formatNumber(tag.subscriber_count)}
                        </a>
                      </td>
                      {canWrite ? (
                        <td>
                          <Button class="button-small" variant="danger" onClick={() => setDeleting(tag)} aria-label={t("tags.deleteNamed", { name: tag.name })}>
                            {t("tags.delete")}
                          </Button>
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
      <ConfirmDialog open={deleting !== undefined} title={t("tags.deleteTitle")} confirmLabel={t("tags.delete")} danger busy={submit.busy} onConfirm={remove} onCancel={() => setDeleting(undefined)}>
        <p>{t("tags.deleteConfirm", { name: deleting?.name ?? "", count: formatNumber(deleting?.subscriber_count ?? 0) })}</p>
      </ConfirmDialog>
    </Page>
  );
}
