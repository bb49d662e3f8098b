import { useEffect, useRef, useState } from "preact/hooks";
import { WEBHOOK_EVENT_TYPE_NAMES } from "../../../../proto/webhook-event-types";
import type { ApiProblem } from "../../api/client";
import { t } from "../../i18n";
import { CopyButton, Field, formValue } from "../../kit";

// The fields an endpoint is made of (URL, description, event types), shared
// by the create form of /webhooks and the edit form of /webhooks/:id. The
// event types come from their one list (proto/webhook-event-types.ts), the
// list the API validates against.

export const ALL_EVENTS = "*";

export interface EndpointValues {
  url: string;
  description: string;
  events: string[];
}

/** The values of a form holding EndpointFields. */
export function endpointValues(form: HTMLFormElement): EndpointValues {
  const events = new FormData(form).getAll("events").filter((v): v is string => typeof v === "string");
  return { url: formValue(form, "url").trim(), description: formValue(form, "description").trim(), events: events.includes(ALL_EVENTS) ? [ALL_EVENTS] : events };
}

export function EndpointFields(props: { initial?: EndpointValues; problem: ApiProblem | undefined }) {
  const initial = props.initial ?? { url: "", description: "", events: [ALL_EVENTS] };
  const [all, setAll] = useState(initial.events.includes(ALL_EVENTS));
  return (
    <>
      <Field label={t("webhooks.field.url")} hint={t("webhooks.field.urlHint")} error={props.problem?.field("url")}>
        <input name="url" type="url" required maxLength={2048} defaultValue={initial.url} autoComplete="off" spellcheck={false} />
      </Field>
      <Field label={t("webhooks.field.description")} error={props.problem?.field("description")}>
        <input name="description" type="text" maxLength={500} defaultValue={initial.description} autoComplete="off" />
      </Field>
      <fieldset aria-describedby={props.problem?.field("events") ? "webhook-events-error" : undefined}>
        <legend>{t("webhooks.field.events")}</legend>
        <label class="checkbox">
          <input type="checkbox" name="events" value={ALL_EVENTS} checked={all} onChange={(e) => setAll(e.currentTarget.checked)} />
          {t("webhooks.allEvents")}
        </label>
        <div class="checkbox-grid">
          {WEBHOOK_EVENT_TYPE_NAMES.map((name) => (
            <label key={name} class="checkbox">
              <input type="checkbox" name="events" value={name} disabled={all} defaultChecked={!all && initial.events.includes(name)} />
              <code>{name}</code>
            </label>
          ))}
        </div>
        {props.problem?.field("events") ? (
          <p class="field-error" id="webhook-events-error">
            {props.problem.field("events")}
          </p>
        ) : null}
      </fieldset>
    </>
  );
}

/** A secret shown once (after a create or a rotation): the member copies it now or never sees it again. */
export function SecretOnce(props: { secret: string; onDismiss: () => void }) {
  // Brought into view with the focus: the form that made it may be further down the page.
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => box.current?.focus(), [props.secret]);
  return (
    <div class="alert alert-warn secret-once" role="status" tabIndex={-1} ref={box}>
      <p>
        <strong>{t("webhooks.secretTitle")}</strong> {t("webhooks.secretOnce")}
      </p>
      <p>
        <code class="record-text">{props.secret}</code>
      </p>
      <p class="page-actions">
        <CopyButton text={props.secret} what={t("webhooks.secret")} />
        <button type="button" class="button button-small" onClick={props.onDismiss}>
          {t("webhooks.secretStored")}
        </button>
      </p>
    </div>
  );
}
