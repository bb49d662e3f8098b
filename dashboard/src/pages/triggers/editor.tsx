import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Badge, Button, ConfirmDialog, fetchAll, Field, FormProblem, Loadable, notify, Page, Section, submitLabel, useLoad, useSubmit } from "../../kit";
import { href, navigate } from "../../router";
import type { PageProps } from "../../routes";
import { useCanWrite } from "../../session";
import { DELAY_UNITS, delaySeconds, splitDelay, type DelayUnit } from "./delay";

type Trigger = components["schemas"]["Trigger"];
type EventType = components["schemas"]["EventTypeList"]["items"][number];
type TemplateSummary = components["schemas"]["TemplateSummary"];

/** /triggers/new and /triggers/:id: the trigger's form, its on/off switch and its deletion. */
export default function TriggerPage(props: PageProps) {
  const id = props.params.id;
  const handle = useLoad(async () => {
    const [eventTypes, templates, trigger] = await Promise.all([
      ok(api.GET("/api/v1/event-types", {})),
      fetchAll((cursor) => ok(api.GET("/api/v1/templates", { params: { query: { limit: 500, cursor } } }))),
      id ? ok(api.GET("/api/v1/triggers/{id}", { params: { path: { id } } })) : Promise.resolve(undefined),
    ]);
    return { eventTypes: eventTypes.items, templates, trigger };
  }, [id]);
  const title = id ? t("triggers.trigger") : t("triggers.new");
  return (
    <Page title={title} actions={<a href={href("/triggers")}>{t("triggers.back")}</a>}>
      <Loadable handle={handle}>
        {(data) =>
          data.templates.length === 0 && !data.trigger ? (
            <p class="empty">
              {t("triggers.noTemplates")} <a href={href("/templates/new")}>{t("templates.new")}</a>
            </p>
          ) : (
            <TriggerForm
              eventTypes={data.eventTypes}
              templates={data.templates}
              trigger={data.trigger}
              onSaved={(trigger) => handle.set({ ...data, trigger })}
            />
          )
        }
      </Loadable>
    </Page>
  );
}

function TriggerForm(props: { eventTypes: EventType[]; templates: TemplateSummary[]; trigger?: Trigger; onSaved: (t: Trigger) => void }) {
  const saved = props.trigger;
  const canWrite = useCanWrite("campaigns");
  const submit = useSubmit();
  const toggle = useSubmit();
  const [eventType, setEventType] = useState(saved?.event_type ?? props.eventTypes[0]?.name ?? "");
  const [templateId, setTemplateId] = useState(saved?.template_id ?? props.templates[0]?.id ?? "");
  const [description, setDescription] = useState(saved?.description ?? "");
  const [tag, setTag] = useState(saved?.tag ?? "");
  const initialDelay = splitDelay(saved?.delay_seconds ?? 0);
  const [amount, setAmount] = useState(String(initialDelay.amount));
  const [unit, setUnit] = useState<DelayUnit>(initialDelay.unit);
  const [deleting, setDeleting] = useState(false);
  const chosen = props.eventTypes.find((e) => e.name === eventType);
  const problem = submit.problem;

  const onSubmit = async (event: Event) => {
    event.preventDefault();
    const delay = delaySeconds(Number(amount) || 0, unit);
    const result = await submit.run(async () => {
      if (!saved) {
        return ok(
          api.POST("/api/v1/triggers", {
            body: {
              event_type: eventType as Trigger["event_type"],
              template_id: templateId,
              description,
              delay_seconds: delay,
              ...(chosen?.takes_tag && tag.trim() ? { tag: tag.trim() } : {}),
            },
          }),
        );
      }
      const changes: components["schemas"]["TriggerUpdate"] = {};
      if (templateId !== saved.template_id) changes.template_id = templateId;
      if (description !== saved.description) changes.description = description;
      if (delay !== saved.delay_seconds) changes.delay_seconds = delay;
      if (chosen?.takes_tag && tag.trim() !== saved.tag) changes.tag = tag.trim();
      if (Object.keys(changes).length === 0) return saved;
      return ok(api.PATCH("/api/v1/triggers/{id}", { params: { path: { id: saved.id } }, body: changes }));
    });
    if (!result) return;
    notify(t("triggers.saved"));
    if (!saved) navigate(`/triggers/${result.id}`, { replace: true });
    else props.onSaved(result);
  };

  const setActive = async (active: boolean) => {
    if (!saved) return;
    const result = await toggle.run(() => ok(api.PATCH("/api/v1/triggers/{id}", { params: { path: { id: saved.id } }, body: { is_active: active } })));
    if (!result) return;
    notify(t(active ? "triggers.turnedOn" : "triggers.turnedOff"));
    props.onSaved(result);
  };

  const remove = async () => {
    if (!saved) return;
    const done = await toggle.run(async () => (await ok(api.DELETE("/api/v1/triggers/{id}", { params: { path: { id: saved.id } } })), true));
    setDeleting(false);
    if (!done) return;
    notify(t("triggers.deleted"));
    navigate("/triggers");
  };

  return (
    <>
      {saved ? (
        <Section title={t("triggers.state")}>
          <p>
            <Badge tone={saved.is_active ? "good" : "neutral"}>{t(saved.is_active ? "triggers.on" : "triggers.off")}</Badge>{" "}
            {saved.disabled_reason ? t("triggers.disabledTemplateDeleted") : null}
          </p>
          {saved.last_failure ? (
            <p class="alert alert-warn">
              {t("triggers.lastFailure")}: <code>{saved.last_failure.reason}</code> ({formatDateTime(saved.last_failure.at)})
            </p>
          ) : null}
          <FormProblem problem={toggle.problem} />
          {canWrite ? (
            <div class="page-actions">
              <Button variant={saved.is_active ? undefined : "primary"} busy={toggle.busy} onClick={() => setActive(!saved.is_active)}>
                {t(saved.is_active ? "triggers.turnOff" : "triggers.turnOn")}
              </Button>
              <Button variant="danger" busy={toggle.busy} onClick={() => setDeleting(true)}>
                {t("triggers.delete")}
              </Button>
            </div>
          ) : null}
        </Section>
      ) : null}
      <Section title={t("triggers.settings")}>
        <form onSubmit={onSubmit}>
          <fieldset disabled={!canWrite} class="plain-fieldset">
            <legend class="visually-hidden">{t("triggers.settings")}</legend>
            <Field label={t("triggers.eventType")} hint={chosen?.description} error={problem?.field("event_type")}>
              <select value={eventType} onChange={(e) => setEventType(e.currentTarget.value)} disabled={!!saved}>
                {props.eventTypes.map((e) => (
                  <option key={e.name} value={e.name}>
                    {e.name}
                  </option>
                ))}
              </select>
            </Field>
            {chosen?.takes_tag ? (
              <Field label={t("triggers.tag")} hint={t("triggers.tagHint")} error={problem?.field("tag")}>
                <input value={tag} onInput={(e) => setTag(e.currentTarget.value)} autoComplete="off" />
              </Field>
            ) : null}
            <Field label={t("triggers.template")} error={problem?.field("template_id")}>
              <select value={templateId} onChange={(e) => setTemplateId(e.currentTarget.value)}>
                {props.templates.map((tpl) => (
                  <option key={tpl.id} value={tpl.id}>
                    {tpl.name} ({tpl.slug})
                  </option>
                ))}
                {saved && !props.templates.some((tpl) => tpl.id === saved.template_id) ? <option value={saved.template_id}>{saved.template_id}</option> : null}
              </select>
            </Field>
            <div class="inline-fields">
              <Field label={t("triggers.delayAmount")} hint={t("triggers.delayHint")} error={problem?.field("delay_seconds")}>
                <input type="number" min={0} step={1} value={amount} onInput={(e) => setAmount(e.currentTarget.value)} inputMode="numeric" />
              </Field>
              <Field label={t("triggers.delayUnit")}>
                <select value={unit} onChange={(e) => setUnit(e.currentTarget.value as DelayUnit)}>
                  {DELAY_UNITS.map((u) => (
                    <option key={u.unit} value={u.unit}>
                      {t(`triggers.unit.${u.unit}`)}
                    </option>
                  ))}
                </select>
              </Field>
            </div>
            <Field label={t("triggers.description")} error={problem?.field("description")}>
              <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} maxLength={500} />
            </Field>
            <FormProblem problem={problem} />
            {canWrite ? (
              <Button type="submit" variant="primary" busy={submit.busy}>
                {submitLabel(submit.busy, saved ? t("triggers.save") : t("triggers.create"))}
              </Button>
            ) : (
              <p class="hint">{t("triggers.readOnly")}</p>
            )}
          </fieldset>
        </form>
      </Section>
      <ConfirmDialog open={deleting} title={t("triggers.delete")} confirmLabel={t("triggers.delete")} danger busy={toggle.busy} onConfirm={remove} onCancel={() => setDeleting(false)}>
        <p>{t("triggers.deleteConfirm")}</p>
      </ConfirmDialog>
    </>
  );
}
