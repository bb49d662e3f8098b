import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { Button, FormProblem, LoadMore, Loadable, notify, Page, Section, submitLabel, TableWrap, usePaged, useSubmit } from "../../kit";
import { href } from "../../router";
import { useCanWrite } from "../../session";
import { EndpointFields, endpointValues, SecretOnce } from "./form";
import { EndpointState, eventsLabel } from "./state";

type Webhook = components["schemas"]["Webhook"];

/** /webhooks: the account's endpoints (URL, event types, on or off); create one, its secret shown once. */
export default function Webhooks() {
  const canWrite = useCanWrite("webhooks");
  const [secret, setSecret] = useState<string | undefined>();
  const { handle, more, loadMore } = usePaged<Webhook>(
    async (cursor) => ok(api.GET("/api/v1/webhooks", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })),
    [],
  );
  return (
    <Page title={t("webhooks.title")} description={t("webhooks.description")}>
      {secret ? <SecretOnce secret={secret} onDismiss={() => setSecret(undefined)} /> : null}
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("webhooks.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("webhooks.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("webhooks.col.url")}</th>
                    <th scope="col">{t("webhooks.col.events")}</th>
                    <th scope="col">{t("webhooks.col.state")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((w) => (
                    <tr key={w.id}>
                      <td class="wrap-anywhere">
                        <a href={href(`/webhooks/${encodeURIComponent(w.id)}`)}>{w.url}</a>
                        {w.description ? <p class="hint">{w.description}</p> : null}
                      </td>
                      <td>{eventsLabel(w.events)}</td>
                      <td>
                        <EndpointState webhook={w} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
            <LoadMore next={data.next} more={more} onClick={loadMore} />
          </>
        )}
      </Loadable>
      {/* After the list: the endpoints first, the long form (every event type) below them,
          shown with the list's first answer so that the list's arrival does not push it down. */}
      {canWrite && handle.result.state !== "loading" ? (
        <CreateWebhook
          onCreated={(s) => {
            setSecret(s);
            handle.reload();
          }}
        />
      ) : null}
    </Page>
  );
}

function CreateWebhook(props: { onCreated: (secret: string) => void }) {
  const submit = useSubmit();
  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const created = await submit.run(() => ok(api.POST("/api/v1/webhooks", { body: endpointValues(form) })));
    if (!created) return;
    form.reset();
    notify(t("webhooks.created"));
    props.onCreated(created.secret);
  };
  return (
    <Section title={t("webhooks.create")}>
      <form onSubmit={onSubmit}>
        <EndpointFields problem={submit.problem} />
        <FormProblem problem={submit.problem} />
        <Button type="submit" variant="primary" busy={submit.busy}>
          {submitLabel(submit.busy, t("webhooks.createSubmit"))}
        </Button>
      </form>
    </Section>
  );
}
