import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiProblem, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatNumber, t, tn } from "../../i18n";
import { Button, ConfirmDialog, fetchAll, Field, FormProblem, Loadable, Page, Section, submitLabel, useDebounced, useLoad, useSubmit, notify } from "../../kit";
import { href, navigate } from "../../router";
import { useCanWrite } from "../../session";

type TagFilter = components["schemas"]["TagFilter"];
type Condition = NonNullable<TagFilter["metadata"]>[number];

/** One metadata condition as the form holds it (`kind` picks `equals` or `exists`). */
interface ConditionRow {
  key: string;
  kind: "equals" | "exists" | "absent";
  value: string;
}

function toCondition(row: ConditionRow): Condition {
  if (row.kind === "equals") return { key: row.key.trim(), equals: row.value };
  return { key: row.key.trim(), exists: row.kind === "exists" };
}

/** The filter the form describes, as the API takes it. */
export function filterOf(include: string[], match: "any" | "all", exclude: string[], rows: ConditionRow[]): TagFilter {
  const metadata = rows.filter((r) => r.key.trim() !== "").map(toCondition);
  return { include_tags: include, match, exclude_tags: exclude, ...(metadata.length > 0 ? { metadata } : {}) };
}

/** An RFC 3339 time of a `datetime-local` value, read in the member's own time zone. */
export function localToRfc3339(value: string): string | undefined {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

export default function NewCampaign() {
  const canWrite = useCanWrite("campaigns");
  const choices = useLoad(async () => {
    const [templates, tags] = await Promise.all([
      fetchAll((cursor) => ok(api.GET("/api/v1/templates", { params: { query: { limit: 500, cursor } } }))),
      fetchAll((cursor) => ok(api.GET("/api/v1/tags", { params: { query: { limit: 500, cursor } } }))),
    ]);
    return { templates, tags };
  }, []);
  return (
    <Page title={t("campaigns.new")} actions={<a href={href("/campaigns")}>{t("campaigns.back")}</a>}>
      {canWrite ? (
        <Loadable handle={choices} isEmpty={(d) => d.templates.length === 0} empty={<NoTemplates />}>
          {(data) => <CampaignForm templates={data.templates} tags={data.tags.map((tag) => tag.name)} />}
        </Loadable>
      ) : (
        <p class="alert alert-info">{t("campaigns.readOnly")}</p>
      )}
    </Page>
  );
}

function NoTemplates() {
  return (
    <p>
      {t("campaigns.noTemplates")} <a href={href("/templates/new")}>{t("templates.new")}</a>
    </p>
  );
}

function TagChoices(props: { legend: string; tags: string[]; chosen: string[]; onChange: (next: string[]) => void; name: string }) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      {props.tags.length === 0 ? <p class="hint">{t("campaigns.noTags")}</p> : null}
      <div class="choices">
        {props.tags.map((tag) => (
          <label key={tag} class="checkbox">
            <input
              type="checkbox"
              name={props.name}
              value={tag}
              checked={props.chosen.includes(tag)}
              onChange={(e) => props.onChange(e.currentTarget.checked ? [...props.chosen, tag] : props.chosen.filter((x) => x !== tag))}
            />
            {tag}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

function CampaignForm(props: { templates: components["schemas"]["TemplateSummary"][]; tags: string[] }) {
  const submit = useSubmit();
  const [name, setName] = useState("");
  const [templateId, setTemplateId] = useState(props.templates[0]?.id ?? "");
  const [include, setInclude] = useState<string[]>([]);
  const [match, setMatch] = useState<"any" | "all">("any");
  const [exclude, setExclude] = useState<string[]>([]);
  const [rows, setRows] = useState<ConditionRow[]>([]);
  const [when, setWhen] = useState<"now" | "later" | "draft">("now");
  const [sendAt, setSendAt] = useState("");
  const [confirming, setConfirming] = useState(false);
  const filter = filterOf(include, match, exclude, rows);
  const settledFilter = useDebounced(JSON.stringify(filter), 500);
  const [count, setCount] = useState<{ state: "loading" } | { state: "ready"; count: number } | { state: "error"; error: ApiProblem }>({ state: "loading" });
  const generation = useRef(0);
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;

  useEffect(() => {
    const mine = ++generation.current;
    setCount({ state: "loading" });
    ok(api.POST("/api/v1/campaigns/recipient-count", { body: { tag_filter: JSON.parse(settledFilter) as TagFilter } })).then(
      (answer) => mine === generation.current && setCount({ state: "ready", count: answer.count }),
      (err: unknown) => mine === generation.current && setCount({ state: "error", error: err instanceof ApiProblem ? err : new ApiProblem(0, "error", String(err)) }),
    );
  }, [settledFilter]);

  const problem = submit.problem;
  const setRow = (i: number, change: Partial<ConditionRow>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));

  const create = async () => {
    setConfirming(false);
    const campaign = await submit.run(async () => {
      if (when === "later" && !localToRfc3339(sendAt)) throw new ApiProblem(400, "validation_failed", t("campaigns.sendAtMissing"), [{ field: "send_at", message: t("campaigns.sendAtMissing") }]);
      const draft = await ok(api.POST("/api/v1/campaigns", { body: { name, template_id: templateId, tag_filter: filter } }));
      if (when === "draft") return draft;
      try {
        return await ok(api.POST("/api/v1/campaigns/{id}/send", { params: { path: { id: draft.id } }, body: when === "later" ? { send_at: localToRfc3339(sendAt)! } : {} }));
      } catch (err) {
        // The draft exists: its page shows it, with the send to try again.
        notify(err instanceof ApiProblem ? err.detail : String(err), "error");
        return draft;
      }
    });
    if (campaign) navigate(`/campaigns/${campaign.id}`);
  };

  const onSubmit = (event: Event) => {
    event.preventDefault();
    if (when === "draft") void create();
    else setConfirming(true);
  };

  return (
    <form onSubmit={onSubmit}>
      <Section title={t("campaigns.what")}>
        <Field label={t("campaigns.name")} error={problem?.field("name")}>
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
        </Field>
        <Field label={t("campaigns.template")} error={problem?.field("template_id")}>
          <select value={templateId} onChange={(e) => setTemplateId(e.currentTarget.value)}>
            {props.templates.map((tpl) => (
              <option key={tpl.id} value={tpl.id}>
                {tpl.name} ({tpl.slug})
              </option>
            ))}
          </select>
        </Field>
      </Section>
      <Section title={t("campaigns.audience")}>
        <TagChoices legend={t("campaigns.includeTags")} tags={props.tags} chosen={include} onChange={setInclude} name="include" />
        <fieldset>
          <legend>{t("campaigns.match")}</legend>
          {(["any", "all"] as const).map((m) => (
            <label key={m} class="checkbox">
              <input type="radio" name="match" value={m} checked={match === m} onChange={() => setMatch(m)} />
              {t(m === "any" ? "campaigns.match.any" : "campaigns.match.all")}
            </label>
          ))}
        </fieldset>
        <TagChoices legend={t("campaigns.excludeTags")} tags={props.tags} chosen={exclude} onChange={setExclude} name="exclude" />
        <fieldset>
          <legend>{t("campaigns.conditions")}</legend>
          {rows.map((row, i) => (
            <div key={i} class="condition-row">
              <Field label={t("campaigns.conditionKey")}>
                <input value={row.key} onInput={(e) => setRow(i, { key: e.currentTarget.value })} autoComplete="off" />
              </Field>
              <Field label={t("campaigns.conditionKind")}>
                <select value={row.kind} onChange={(e) => setRow(i, { kind: e.currentTarget.value as ConditionRow["kind"] })}>
                  <option value="equals">{t("campaigns.condition.equals")}</option>
                  <option value="exists">{t("campaigns.condition.exists")}</option>
                  <option value="absent">{t("campaigns.condition.absent")}</option>
                </select>
              </Field>
              {row.kind === "equals" ? (
                <Field label={t("campaigns.conditionValue")}>
                  <input value={row.value} onInput={(e) => setRow(i, { value: e.currentTarget.value })} autoComplete="off" />
                </Field>
              ) : null}
              <Button onClick={() => setRows(rows.filter((_, j) => j !== i))}>{t("campaigns.conditionRemove")}</Button>
            </div>
          ))}
          <Button onClick={() => setRows([...rows, { key: "", kind: "equals", value: "" }])}>{t("campaigns.conditionAdd")}</Button>
        </fieldset>
        <p class="recipient-count" role="status" aria-live="polite">
          {count.state === "loading" ? t("campaigns.counting") : null}
          {count.state === "ready" ? <strong>{tn("campaigns.recipientCount", count.count)}</strong> : null}
          {count.state === "error" ? `${t("campaigns.countFailed")} ${count.error.detail}` : null}
        </p>
      </Section>
      <Section title={t("campaigns.schedule")}>
        <fieldset>
          <legend>{t("campaigns.whenLegend")}</legend>
          {(["now", "later", "draft"] as const).map((w) => (
            <label key={w} class="checkbox">
              <input type="radio" name="when" value={w} checked={when === w} onChange={() => setWhen(w)} />
              {t(`campaigns.when.${w}`)}
            </label>
          ))}
        </fieldset>
        {when === "later" ? (
          <Field label={t("campaigns.sendAt")} hint={t("campaigns.sendAtHint", { zone })} error={problem?.field("send_at")}>
            <input type="datetime-local" value={sendAt} onInput={(e) => setSendAt(e.currentTarget.value)} required />
          </Field>
        ) : null}
        <FormProblem problem={problem} />
        <Button type="submit" variant="primary" busy={submit.busy}>
          {submitLabel(submit.busy, t(`campaigns.submit.${when}`))}
        </Button>
      </Section>
      <ConfirmDialog
        open={confirming}
        title={t(when === "later" ? "campaigns.confirmScheduleTitle" : "campaigns.confirmSendTitle")}
        confirmLabel={t(`campaigns.submit.${when}`)}
        busy={submit.busy}
        onConfirm={create}
        onCancel={() => setConfirming(false)}
      >
        <p>{count.state === "ready" ? t("campaigns.confirmSend", { count: formatNumber(count.count), name }) : t("campaigns.confirmSendUnknown", { name })}</p>
      </ConfirmDialog>
    </form>
  );
}
