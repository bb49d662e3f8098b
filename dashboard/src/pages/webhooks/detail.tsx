import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Button, ConfirmDialog, FormProblem, LoadMore, Loadable, notify, Page, Section, submitLabel, TableWrap, useLoad, usePaged, usePoll, useSubmit } from "../../kit";
import type { PageProps } from "../../routes";
import { href, navigate } from "../../router";
import { useCanWrite } from "../../session";
import { EndpointFields, endpointValues, SecretOnce } from "./form";
import { DeliveryStatus, EndpointState, eventsLabel } from "./state";

type Webhook = components["schemas"]["Webhook"];
type Delivery = components["schemas"]["WebhookDelivery"];

/** /webhooks/:id: the endpoint (edit, on/off, rotate its secret, delete) and its delivery log with replay. */
export default function WebhookPage(props: PageProps) {
  const id = props.params.id ?? "";
  const handle = useLoad(() => ok(api.GET("/api/v1/webhooks/{id}", { params: { path: { id } } })), [id]);
  return (
    <Page title={t("webhooks.detailTitle")} description={<a href={href("/webhooks")}>{t("webhooks.back")}</a>}>
      <Loadable handle={handle}>
        {(webhook) => (
          <>
            <Endpoint webhook={webhook} onChange={handle.set} />
            <Deliveries webhookId={webhook.id} />
          </>
        )}
      </Loadable>
    </Page>
  );
}

function Endpoint(props: { webhook: Webhook; onChange: (w: Webhook) => void }) {
  const w = props.webhook;
  const canWrite = useCanWrite("webhooks");
  const save = useSubmit();
  const toggle = useSubmit();
  const rotate = useSubmit();
  const remove = useSubmit();
  const [secret, setSecret] = useState<string | undefined>();
  const [asking, setAsking] = useState<"rotate" | "delete" | undefined>();
  const path = { params: { path: { id: w.id } } };

  const onSave = async (event: Event) => {
    event.preventDefault();
    const changed = await save.run(() => ok(api.PATCH("/api/v1/webhooks/{id}", { ...path, body: endpointValues(event.currentTarget as HTMLFormElement) })));
    if (!changed) return;
    props.onChange(changed);
    notify(t("webhooks.saved"));
  };
  const onToggle = async () => {
    const changed = await toggle.run(() => ok(api.PATCH("/api/v1/webhooks/{id}", { ...path, body: { is_active: !w.is_active } })));
    if (!changed) return;
    props.onChange(changed);
    notify(changed.is_active ? t("webhooks.turnedOn") : t("webhooks.turnedOff"));
  };
  const onRotate = async () => {
    const rotated = await rotate.run(() => ok(api.POST("/api/v1/webhooks/{id}/rotate-secret", path)));
    setAsking(undefined);
    if (!rotated) return;
    const { secret: fresh, ...endpoint } = rotated;
    props.onChange(endpoint);
    setSecret(fresh);
  };
  const onDelete = async () => {
    const done = await remove.run(async () => (await ok(api.DELETE("/api/v1/webhooks/{id}", path)), true));
    setAsking(undefined);
    if (!done) return;
    notify(t("webhooks.deleted"));
    navigate("/webhooks");
  };

  return (
    <>
      {secret ? <SecretOnce secret={secret} onDismiss={() => setSecret(undefined)} /> : null}
      <Section
        title={t("webhooks.endpoint")}
        actions={
          canWrite ? (
            <Button busy={toggle.busy} onClick={onToggle}>
              {submitLabel(toggle.busy, w.is_active ? t("webhooks.turnOff") : t("webhooks.turnOn"))}
            </Button>
          ) : null
        }
      >
        <dl class="facts">
          <dt>{t("webhooks.col.url")}</dt>
          <dd class="mono">{w.url}</dd>
          <dt>{t("webhooks.col.events")}</dt>
          <dd>{eventsLabel(w.events)}</dd>
          <dt>{t("webhooks.col.state")}</dt>
          <dd>
            <EndpointState webhook={w} />
            {w.disabled_at ? ` ${t("webhooks.disabledAt", { at: formatDateTime(w.disabled_at) })}` : null}
          </dd>
          {w.previous_secret_expires_at ? (
            <>
              <dt>{t("webhooks.previousSecret")}</dt>
              <dd>{t("webhooks.previousSecretUntil", { at: formatDateTime(w.previous_secret_expires_at) })}</dd>
            </>
          ) : null}
        </dl>
        <FormProblem problem={toggle.problem} />
      </Section>

      {canWrite ? (
        <>
          <Section title={t("webhooks.edit")}>
            {/* Keyed by the last change: the form shows what was saved. */}
            <form key={w.updated_at} onSubmit={onSave}>
              <EndpointFields initial={{ url: w.url, description: w.description, events: w.events }} problem={save.problem} />
              <FormProblem problem={save.problem} />
              <Button type="submit" variant="primary" busy={save.busy}>
                {submitLabel(save.busy, t("webhooks.save"))}
              </Button>
            </form>
          </Section>
          <Section title={t("webhooks.secretSection")}>
            <p>{t("webhooks.rotateIntro")}</p>
            <FormProblem problem={rotate.problem ?? remove.problem} />
            <div class="page-actions">
              <Button onClick={() => setAsking("rotate")}>{t("webhooks.rotate")}</Button>
              <Button variant="danger" onClick={() => setAsking("delete")}>
                {t("webhooks.delete")}
              </Button>
            </div>
          </Section>
        </>
      ) : null}
      <ConfirmDialog open={asking === "rotate"} title={t("webhooks.rotate")} confirmLabel={t("webhooks.rotate")} busy={rotate.busy} onConfirm={onRotate} onCancel={() => setAsking(undefined)}>
        <p>{t("webhooks.rotateConfirm")}</p>
      </ConfirmDialog>
      <ConfirmDialog open={asking === "delete"} title={t("webhooks.delete")} confirmLabel={t("webhooks.delete")} danger busy={remove.busy} onConfirm={onDelete} onCancel={() => setAsking(undefined)}>
        <p>{t("webhooks.deleteConfirm", { url: w.url })}</p>
      </ConfirmDialog>
    </>
  );
}

function Deliveries(props: { webhookId: string }) {
  const canWrite = useCanWrite("webhooks");
  const replay = useSubmit();
  const { handle, more, loadMore } = usePaged<Delivery>(
    async (cursor) =>
      ok(api.GET("/api/v1/webhooks/{id}/deliveries", { params: { path: { id: props.webhookId }, query: { limit: 50, ...(cursor ? { cursor } : {}) } } })),
    [props.webhookId],
  );
  // While a delivery waits for its next attempt (a replay, a retry), the log follows it by itself.
  const waiting = handle.result.state === "ready" && handle.result.data.items.some((d) => d.state === "pending");
  usePoll(waiting, 2000, handle.reload);
  const onReplay = async (delivery: Delivery) => {
    const due = await replay.run(() => ok(api.POST("/api/v1/webhooks/{id}/deliveries/{delivery_id}/replay", { params: { path: { id: props.webhookId, delivery_id: delivery.id } } })));
    if (!due) return;
    notify(t("webhooks.replayed", { id: delivery.id }));
    handle.reload();
  };
  return (
    <Section
      title={t("webhooks.deliveries")}
      actions={
        <Button class="button-small" onClick={handle.reload}>
          {t("webhooks.refresh")}
        </Button>
      }
    >
      <FormProblem problem={replay.problem} />
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("webhooks.noDeliveries")}>
        {(data) => (
          <>
            <TableWrap label={t("webhooks.deliveriesTable")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("webhooks.col.event")}</th>
                    <th scope="col">{t("webhooks.col.deliveryState")}</th>
                    <th scope="col" class="num">
                      {t("webhooks.col.attempts")}
                    </th>
                    <th scope="col" class="num">
                      {t("webhooks.col.response")}
                    </th>
                    <th scope="col">{t("webhooks.col.when")}</th>
                    {canWrite ? (
                      <th scope="col">
                        <span class="visually-hidden">{t("webhooks.col.actions")}</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((d) => (
                    <tr key={d.id}>
                      <td>
                        <code>{d.event_type}</code>
                        <br />
                        <span class="hint mono">{d.id}</span>
                      </td>
                      <td>
                        <DeliveryStatus state={d.state} />
                        {d.error ? <p class="hint">{d.error}</p> : null}
                      </td>
                      <td class="num">{d.attempts}</td>
                      <td class="num">{d.response_code ?? "–"}</td>
                      <td>
                        {d.attempted_at ? formatDateTime(d.attempted_at) : t("webhooks.notAttempted")}
                        {d.next_attempt_at ? <p class="hint">{t("webhooks.nextAttempt", { at: formatDateTime(d.next_attempt_at) })}</p> : null}
                      </td>
                      {canWrite ? (
                        <td>
                          <Button class="button-small" busy={replay.busy} onClick={() => onReplay(d)} aria-label={t("webhooks.replayOne", { event: d.event_type, id: d.id })}>
                            {t("webhooks.replay")}
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
    </Section>
  );
}
