import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiProblem, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { t } from "../../i18n";
import { ErrorState, Loading, TableWrap, useDebounced } from "../../kit";

export type DraftPreview = components["schemas"]["TemplateDraftPreview"];
export type PreviewState = { state: "loading"; last?: DraftPreview } | { state: "ready"; data: DraftPreview } | { state: "error"; error: ApiProblem; last?: DraftPreview };

/**
 * The API's render of content as it stands (POST /api/v1/templates/preview:
 * nothing is stored), asked again half a second after the content or the
 * sample values last changed; an answer to an older request is dropped.
 * While a request runs or fails, the last good render stays.
 */
export function useDraftPreview(subject: string, mjml: string, variables: Record<string, unknown>): PreviewState {
  const request = useDebounced(JSON.stringify({ subject, mjml_content: mjml, variables }), 500);
  const [state, setState] = useState<PreviewState>({ state: "loading" });
  const generation = useRef(0);
  useEffect(() => {
    const mine = ++generation.current;
    const body = JSON.parse(request) as components["schemas"]["TemplateDraftPreviewRequest"];
    setState((s) => ({ state: "loading", last: s.state === "ready" ? s.data : s.last }));
    ok(api.POST("/api/v1/templates/preview", { body })).then(
      (data) => mine === generation.current && setState({ state: "ready", data }),
      (err: unknown) =>
        mine === generation.current &&
        setState((s) => ({
          state: "error",
          error: err instanceof ApiProblem ? err : new ApiProblem(0, "error", String(err)),
          last: s.state === "ready" ? s.data : s.last,
        })),
    );
  }, [request]);
  return state;
}

/** The last good render, at a desktop and at a phone width, each in a sandboxed frame (no scripts, no same origin). */
export function PreviewFrames(props: { preview: PreviewState }) {
  const p = props.preview;
  const shown = p.state === "ready" ? p.data : p.last;
  return (
    <div aria-busy={p.state === "loading"}>
      {p.state === "error" && !p.error.errors.length ? <ErrorState problem={p.error} /> : null}
      {p.state === "error" && p.error.errors.length ? (
        <p class="alert alert-warn" role="status">
          {t("templates.previewStale")}
        </p>
      ) : null}
      {!shown && p.state === "loading" ? <Loading /> : null}
      {shown ? (
        <>
          <p>
            <strong>{t("templates.subject")}:</strong> <span data-testid="preview-subject">{shown.subject}</span>
          </p>
          {shown.missing_variables.length > 0 ? <p class="hint">{t("templates.missing", { names: shown.missing_variables.join(", ") })}</p> : null}
          <div class="preview-pair">
            <figure>
              <figcaption>{t("templates.desktop")}</figcaption>
              <TableWrap label={t("templates.previewDesktop")}>
                <iframe class="preview-frame desktop" sandbox="" srcdoc={shown.html} title={t("templates.previewDesktop")} />
              </TableWrap>
            </figure>
            <figure>
              <figcaption>{t("templates.phone")}</figcaption>
              <TableWrap label={t("templates.previewPhone")}>
                <iframe class="preview-frame phone" sandbox="" srcdoc={shown.html} title={t("templates.previewPhone")} />
              </TableWrap>
            </figure>
          </div>
        </>
      ) : null}
    </div>
  );
}
