import type { ButtonHTMLAttributes, ComponentChildren, JSX } from "preact";
import { cloneElement, isValidElement } from "preact";
import { useId, useState } from "preact/hooks";
import { ApiProblem } from "../api/client";
import { t } from "../i18n";
import { problemTitle } from "./load";

/**
 * A labelled form control: the label, a hint and the error are tied to the
 * control (for, aria-describedby, aria-invalid), so a screen reader reads
 * them with it. The one child is the control (input, select, textarea).
 */
export function Field(props: { label: string; hint?: ComponentChildren; error?: string | undefined; children: JSX.Element; class?: string }) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(" ") || undefined;
  const control = isValidElement(props.children)
    ? cloneElement(props.children, { id, "aria-describedby": describedBy, "aria-invalid": props.error ? "true" : undefined } as Record<string, unknown>)
    : props.children;
  return (
    <div class={`field ${props.class ?? ""}`}>
      <label for={id}>{props.label}</label>
      {control}
      {props.hint ? (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      ) : null}
      {props.error ? (
        <p class="field-error" id={errorId}>
          {props.error}
        </p>
      ) : null}
    </div>
  );
}

/** A problem of a form's submission, with the fields it names. */
export function FormProblem(props: { problem: ApiProblem | undefined }) {
  const p = props.problem;
  if (!p) return null;
  return (
    <div class="alert alert-error" role="alert">
      <p>
        <strong>{problemTitle(p)}</strong> {p.detail}
      </p>
      {p.errors.length > 0 ? (
        <ul>
          {p.errors.map((e) => (
            <li key={e.field}>
              <code>{e.field}</code>: {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * A form submission: `busy` while it runs (the button says so and is not
 * clicked twice), the problem when the API refused it.
 */
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiProblem | undefined>();
  const run = async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    if (busy) return undefined;
    setBusy(true);
    setProblem(undefined);
    try {
      return await work();
    } catch (err) {
      setProblem(err instanceof ApiProblem ? err : new ApiProblem(0, "error", err instanceof Error ? err.message : String(err)));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { busy, problem, setProblem, run };
}

export function Button(
  props: ButtonHTMLAttributes<HTMLButtonElement> & { variant?: "primary" | "danger" | "plain"; busy?: boolean; type?: "button" | "submit" },
) {
  const { variant, busy, type, children, disabled, ...rest } = props;
  return (
    <button {...rest} type={type ?? "button"} class={`button ${variant ? `button-${variant}` : ""} ${props.class ?? ""}`} disabled={disabled || busy} aria-busy={busy || undefined}>
      {children}
    </button>
  );
}

/** The value of a form's named control. */
export function formValue(form: HTMLFormElement, name: string): string {
  const value = new FormData(form).get(name);
  return typeof value === "string" ? value : "";
}

export function submitLabel(busy: boolean, label: string): string {
  return busy ? t("state.working") : label;
}
