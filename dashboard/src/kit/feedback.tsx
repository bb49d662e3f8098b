import type { ComponentChildren } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { t } from "../i18n";

// Notices: short confirmations of what just happened ("Key revoked"), read
// out by screen readers (a polite live region that is always in the page).

interface Notice {
  id: number;
  text: string;
  kind: "success" | "error";
}

let nextId = 1;
const listeners = new Set<(n: Notice[]) => void>();
let notices: Notice[] = [];

export function notify(text: string, kind: Notice["kind"] = "success"): void {
  const notice = { id: nextId++, text, kind };
  notices = [...notices, notice].slice(-3);
  listeners.forEach((l) => l(notices));
  setTimeout(() => {
    notices = notices.filter((n) => n.id !== notice.id);
    listeners.forEach((l) => l(notices));
  }, 6000);
}

export function Notices() {
  const [shown, setShown] = useState(notices);
  useEffect(() => {
    listeners.add(setShown);
    return () => void listeners.delete(setShown);
  }, []);
  return (
    <div class="notices" role="status" aria-live="polite">
      {shown.map((n) => (
        <p key={n.id} class={`notice notice-${n.kind}`}>
          {n.text}
        </p>
      ))}
    </div>
  );
}

/**
 * A modal question (the native <dialog>: focus is kept inside, Escape
 * cancels, focus returns to the opener). For what cannot be undone, set
 * `confirmText`: the member types it (an address, a name) to enable the button.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  /** The confirm button is off until the dialog's own fields are filled (a reason the API needs). */
  disabled?: boolean;
  confirmText?: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  // Ids of its own: a page may hold several dialogs (one open at a time), each named by its own title.
  const id = useId();
  const [typed, setTyped] = useState("");
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) {
      setTyped("");
      dialog.showModal();
    } else if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  const blocked = props.confirmText !== undefined && typed.trim() !== props.confirmText;
  return (
    <dialog ref={ref} class="dialog" aria-labelledby={`${id}-title`} onCancel={(e) => (e.preventDefault(), props.onCancel())}>
      <h2 id={`${id}-title`}>{props.title}</h2>
      <div class="dialog-body">{props.children}</div>
      {props.confirmText !== undefined ? (
        <div class="field">
          <label for={`${id}-confirm`}>{t("dialog.typeToConfirm", { text: props.confirmText })}</label>
          <input id={`${id}-confirm`} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autoComplete="off" />
        </div>
      ) : null}
      <div class="dialog-actions">
        <button type="button" class="button" onClick={props.onCancel}>
          {t("action.cancel")}
        </button>
        <button type="button" class={`button ${props.danger ? "button-danger" : "button-primary"}`} disabled={blocked || props.busy || props.disabled} aria-busy={props.busy || undefined} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/**
 * Copies a text (a new key, a DNS record) and says so. `what` names the text
 * for a screen reader when a page has several ("Copy: value of the DKIM
 * record"); the visible word stays the button's name's start.
 */
export function CopyButton(props: { text: string; label?: string; what?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
    } catch {
      // No clipboard permission (an insecure origin): the text stays selectable beside the button.
      return notify(t("copy.failed"), "error");
    }
    setCopied(true);
    notify(t("copy.done"));
    setTimeout(() => setCopied(false), 2000);
  };
  return (
    <button type="button" class="button button-small" onClick={copy} aria-label={props.what ? `${copied ? t("copy.copied") : props.label ?? t("copy.copy")}: ${props.what}` : undefined}>
      {copied ? t("copy.copied") : props.label ?? t("copy.copy")}
    </button>
  );
}

/** A state shown as a word (never by colour alone). */
export function Badge(props: { tone?: "good" | "bad" | "warn" | "neutral" | "info"; children: ComponentChildren }) {
  return <span class={`badge badge-${props.tone ?? "neutral"}`}>{props.children}</span>;
}

/** A table that scrolls sideways inside itself on a narrow screen, never the page. */
export function TableWrap(props: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap" role="region" aria-label={props.label} tabIndex={0}>
      {props.children}
    </div>
  );
}
