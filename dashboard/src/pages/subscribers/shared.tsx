// What the subscribers pages share: the API's types, a status as a badge,
// and the metadata editor (key/value rows) of the add form and the
// subscriber's page.

import { useId } from "preact/hooks";
import type { components } from "../../api/schema";
import { t, type MessageKey } from "../../i18n";
import { Badge, Button } from "../../kit";

export type Subscriber = components["schemas"]["Subscriber"];
export type SubscriberStatus = Subscriber["status"];
export type Tag = components["schemas"]["Tag"];
export type ImportJob = components["schemas"]["Import"];

export const STATUSES: readonly SubscriberStatus[] = ["active", "pending", "unsubscribed", "bounced", "complained"];
/** The subscriber's languages (the platform's, as the API takes them). */
export const SUBSCRIBER_LOCALES = ["en", "de", "fr", "it"] as const;

const STATUS_TONE: Record<SubscriberStatus, "good" | "bad" | "warn" | "neutral" | "info"> = {
  active: "good",
  pending: "info",
  unsubscribed: "neutral",
  bounced: "bad",
  complained: "bad",
};

export function statusLabel(status: SubscriberStatus): string {
  return t(`subscribers.status.${status}` as MessageKey);
}

export function StatusBadge(props: { status: SubscriberStatus }) {
  return <Badge tone={STATUS_TONE[props.status]}>{statusLabel(props.status)}</Badge>;
}

/** Tag names as typed: separated by commas, trimmed, empty ones dropped. */
export function tagList(text: string): string[] {
  return [...new Set(text.split(",").map((s) => s.trim()).filter(Boolean))];
}

/** One metadata entry being edited; `value` as typed (numbers and booleans are read back by `metadataValue`). */
export interface MetadataRow {
  key: string;
  value: string;
}

export function metadataRows(metadata: Record<string, unknown>): MetadataRow[] {
  return Object.entries(metadata).map(([key, value]) => ({ key, value: String(value) }));
}

/**
 * A typed value as stored: "true"/"false" a boolean, a plain decimal number
 * a number, else the text. (The API keeps strings, numbers and booleans.)
 */
export function metadataValue(text: string): string | number | boolean {
  if (text === "true") return true;
  if (text === "false") return false;
  if (/^-?(0|[1-9]\d{0,14})(\.\d+)?$/.test(text.trim())) return Number(text.trim());
  return text;
}

/** The rows as a metadata object (rows without a key are left out). */
export function metadataObject(rows: readonly MetadataRow[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const row of rows) if (row.key.trim()) out[row.key.trim()] = metadataValue(row.value);
  return out;
}

/** Key/value rows: each labelled, removable; "Add a field" appends an empty one. */
export function MetadataEditor(props: { rows: MetadataRow[]; onChange: (rows: MetadataRow[]) => void; disabled?: boolean; error?: string | undefined }) {
  const id = useId();
  const change = (i: number, patch: Partial<MetadataRow>) => props.onChange(props.rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <fieldset class="metadata-editor" aria-describedby={props.error ? `${id}-error` : `${id}-hint`}>
      <legend>{t("subscribers.metadata")}</legend>
      <p class="hint" id={`${id}-hint`}>
        {t("subscribers.metadataHint")}
      </p>
      {props.rows.length === 0 ? <p class="empty">{t("subscribers.metadataEmpty")}</p> : null}
      {props.rows.map((row, i) => (
        <div class="metadata-row" key={i}>
          <div class="field">
            <label for={`${id}-key-${i}`}>{t("subscribers.metadataKey", { n: i + 1 })}</label>
            <input id={`${id}-key-${i}`} value={row.key} maxLength={40} disabled={props.disabled} onInput={(e) => change(i, { key: e.currentTarget.value })} />
          </div>
          <div class="field">
            <label for={`${id}-value-${i}`}>{t("subscribers.metadataValue", { n: i + 1 })}</label>
            <input id={`${id}-value-${i}`} value={row.value} maxLength={500} disabled={props.disabled} onInput={(e) => change(i, { value: e.currentTarget.value })} />
          </div>
          {props.disabled ? null : (
            <Button class="button-small" onClick={() => props.onChange(props.rows.filter((_, j) => j !== i))} aria-label={t("subscribers.metadataRemove", { n: i + 1 })}>
              {t("subscribers.remove")}
            </Button>
          )}
        </div>
      ))}
      {props.error ? (
        <p class="field-error" id={`${id}-error`}>
          {props.error}
        </p>
      ) : null}
      {props.disabled ? null : (
        <Button class="button-small" onClick={() => props.onChange([...props.rows, { key: "", value: "" }])}>
          {t("subscribers.metadataAdd")}
        </Button>
      )}
    </fieldset>
  );
}

/** Every page of a list, for an export: `fetchPage` until the last, `onProgress` with the count so far. */
export async function allPages<T>(fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; next_cursor: string | null }>, onProgress?: (count: number) => void): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    out.push(...page.items);
    onProgress?.(out.length);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return out;
}
