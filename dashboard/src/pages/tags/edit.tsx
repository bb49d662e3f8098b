import { api, ok } from "../../api/client";
import { t } from "../../i18n";
import { Loadable, Page, notify, useLoad } from "../../kit";
import type { PageProps } from "../../routes";
import { href, navigate } from "../../router";
import { useCanWrite } from "../../session";
import { TagForm } from "./form";

/** /tags/new and /tags/:id: the same form, empty or filled. */
export default function TagEdit(props: PageProps) {
  const id = props.params.id;
  const canWrite = useCanWrite("audience");
  const handle = useLoad(async () => (id ? await ok(api.GET("/api/v1/tags/{id}", { params: { path: { id } } })) : undefined), [id]);
  const title = !id ? t("tags.new") : handle.result.state === "ready" && handle.result.data ? handle.result.data.name : t("tags.one");
  return (
    <Page title={title}>
      <p>
        <a href={href("/tags")}>{t("tags.back")}</a>
      </p>
      <Loadable handle={handle}>
        {(tag) => (
          <div class="card">
            {!canWrite ? <p class="alert alert-info">{t("tags.readOnly")}</p> : null}
            <TagForm
              tag={tag}
              disabled={!canWrite}
              submitLabel={tag ? t("tags.save") : t("tags.create")}
              onSubmit={async (fields) => {
                if (tag) {
                  handle.set(await ok(api.PATCH("/api/v1/tags/{id}", { params: { path: { id: tag.id } }, body: fields })));
                  notify(t("tags.saved", { name: fields.name }));
                } else {
                  const created = await ok(api.POST("/api/v1/tags", { body: fields }));
                  notify(t("tags.created", { name: created.name }));
                  navigate("/tags");
                }
              }}
            />
          </div>
        )}
      </Loadable>
    </Page>
  );
}
