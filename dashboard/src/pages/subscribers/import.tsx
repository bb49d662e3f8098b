import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import { formatDateTime, formatNumber, t, type MessageKey } from "../../i18n";
import { Badge, Button, Field, FormProblem, LoadMore, Loadable, Page, Section, TableWrap, notify, saveFile, submitLabel, useLoad, usePaged, usePoll, useSubmit } from "../../kit";
import { href, setQuery, useLocation } from "../../router";
import { useCanWrite } from "../../session";
import { DELIMITERS, guessEmailColumn, metadataKeyOf, parseCsv, type Delimiter } from "./csv";
import type { ImportJob } from "./shared";

/** How much of the file the preview reads: enough for its header and first rows. */
const PREVIEW_BYTES = 64 * 1024;
const PREVIEW_ROWS = 10;
/** Report lines shown on the page (the whole report is a download). */
const REPORT_ROWS = 100;
const POLL_MS = 1000;

const RUNNING: ReadonlySet<ImportJob["state"]> = new Set(["uploading", "queued", "running"]);

export default function ImportPage() {
  const { query } = useLocation();
  const job = query.get("job") ?? "";
  const canWrite = useCanWrite("audience");
  // Bumped when the job shown settles, so the list of past imports shows its end.
  const [settled, setSettled] = useState(0);
  return (
    <Page title={t("import.title")} description={t("import.intro")}>
      <p>
        <a href={href("/subscribers")}>{t("subscribers.back")}</a>
      </p>
      {job ? <Progress id={job} onSettled={() => setSettled((n) => n + 1)} /> : null}
      {canWrite ? <Upload /> : <p class="alert alert-info">{t("subscribers.readOnly")}</p>}
      <PastImports settled={settled} />
    </Page>
  );
}

interface Preview {
  file: File;
  headers: string[];
  rows: string[][];
}

interface Mapping {
  email: string;
  tags: string;
  status: string;
  locale: string;
  /** Metadata columns: header -> key (a header without a key is not imported). */
  metadata: Record<string, string>;
  mode: "create" | "upsert";
}

/** The import API's query of a mapping. */
function importQuery(delimiter: Delimiter, m: Mapping) {
  const metadata = Object.entries(m.metadata)
    .filter(([, key]) => key !== "")
    .map(([header, key]) => `${key}=${header}`)
    .join(",");
  return {
    delimiter,
    mode: m.mode,
    email_column: m.email,
    ...(m.tags ? { tags_column: m.tags } : {}),
    ...(m.status ? { status_column: m.status } : {}),
    ...(m.locale ? { locale_column: m.locale } : {}),
    ...(metadata ? { metadata_columns: metadata } : {}),
  };
}

function Upload() {
  const [delimiter, setDelimiter] = useState<Delimiter>("comma");
  const [preview, setPreview] = useState<Preview | undefined>();
  const [mapping, setMapping] = useState<Mapping | undefined>();
  const [unreadable, setUnreadable] = useState(false);
  const submit = useSubmit();

  const read = async (file: File | undefined, sep: Delimiter) => {
    setUnreadable(false);
    if (!file) return setPreview(undefined);
    const text = await file.slice(0, PREVIEW_BYTES).text();
    const [headers, ...rows] = parseCsv(text, sep, { maxRows: PREVIEW_ROWS + 1, complete: file.size <= PREVIEW_BYTES });
    if (!headers || headers.length === 0) {
      setPreview(undefined);
      return setUnreadable(true);
    }
    const names = headers.map((h) => h.trim());
    setPreview({ file, headers: names, rows });
    const email = guessEmailColumn(names) ?? "";
    const pick = (re: RegExp) => names.find((h) => re.test(h)) ?? "";
    const tags = pick(/^(tags?|lists?|labels?)$/i);
    const status = pick(/^status$/i);
    const locale = pick(/^(locale|language|lang|sprache)$/i);
    const metadata: Record<string, string> = {};
    for (const h of names) if (h !== email && h !== tags && h !== status && h !== locale && !h.includes(",") && h !== "") metadata[h] = metadataKeyOf(h);
    setMapping({ email, tags, status, locale, metadata, mode: "create" });
  };

  const start = (e: Event) => {
    e.preventDefault();
    if (!preview || !mapping) return;
    void submit.run(async () => {
      const job = await ok(
        api.POST("/api/v1/subscribers/imports", {
          params: { query: importQuery(delimiter, mapping) },
          // The file itself is the body, streamed by the browser as it is read.
          body: preview.file,
          bodySerializer: (body: unknown) => body as BodyInit,
          headers: { "Content-Type": "text/csv" },
        }),
      );
      notify(t("import.started"));
      setPreview(undefined);
      setMapping(undefined);
      setQuery({ job: job.id });
    });
  };

  const columnSelect = (label: string, value: string, onChange: (v: string) => void, optional: boolean, name: string) => (
    <Field label={label} error={submit.problem?.field(name)}>
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {optional ? <option value="">{t("import.noColumn")}</option> : null}
        {preview!.headers.map((h) => (
          <option key={h} value={h}>
            {h}
          </option>
        ))}
      </select>
    </Field>
  );

  return (
    <Section title={t("import.upload")}>
      <form class="form" onSubmit={start} noValidate>
        <div class="toolbar">
          <Field label={t("import.file")} hint={t("import.fileHint")}>
            <input type="file" accept=".csv,text/csv" onChange={(e) => void read(e.currentTarget.files?.[0], delimiter)} />
          </Field>
          <Field label={t("import.delimiter")}>
            <select
              value={delimiter}
              onChange={(e) => {
                const next = e.currentTarget.value as Delimiter;
                setDelimiter(next);
                void read(preview?.file, next);
              }}
            >
              {(Object.keys(DELIMITERS) as Delimiter[]).map((d) => (
                <option key={d} value={d}>
                  {t(`import.delimiter.${d}` as MessageKey)}
                </option>
              ))}
            </select>
          </Field>
        </div>
        {unreadable ? <p class="alert alert-error" role="alert">{t("import.unreadable")}</p> : null}
        {preview && mapping ? (
          <>
            <h3>{t("import.preview")}</h3>
            <p>{t("import.previewIntro", { columns: formatNumber(preview.headers.length), rows: formatNumber(preview.rows.length) })}</p>
            <TableWrap label={t("import.preview")}>
              <table>
                <thead>
                  <tr>
                    {preview.headers.map((h, i) => (
                      <th scope="col" key={i}>
                        {h}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {preview.rows.map((row, i) => (
                    <tr key={i}>
                      {preview.headers.map((_, j) => (
                        <td key={j}>{row[j] ?? ""}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
            <h3>{t("import.mapping")}</h3>
            <div class="grid">
              {columnSelect(t("import.emailColumn"), mapping.email, (v) => setMapping({ ...mapping, email: v }), false, "email_column")}
              {columnSelect(t("import.tagsColumn"), mapping.tags, (v) => setMapping({ ...mapping, tags: v }), true, "tags_column")}
              {columnSelect(t("import.statusColumn"), mapping.status, (v) => setMapping({ ...mapping, status: v }), true, "status_column")}
              {columnSelect(t("import.localeColumn"), mapping.locale, (v) => setMapping({ ...mapping, locale: v }), true, "locale_column")}
              <Field label={t("import.mode")} hint={t("import.modeHint")}>
                <select value={mapping.mode} onChange={(e) => setMapping({ ...mapping, mode: e.currentTarget.value as Mapping["mode"] })}>
                  <option value="create">{t("import.mode.create")}</option>
                  <option value="upsert">{t("import.mode.upsert")}</option>
                </select>
              </Field>
            </div>
            <fieldset>
              <legend>{t("import.metadataColumns")}</legend>
              <p class="hint">{t("import.metadataHint")}</p>
              {preview.headers
                .filter((h) => h !== mapping.email && h !== mapping.tags && h !== mapping.status && h !== mapping.locale && h !== "" && !h.includes(","))
                .map((h) => (
                  <div class="metadata-row" key={h}>
                    <div class="checkbox">
                      <input
                        id={`import-meta-${h}`}
                        type="checkbox"
                        checked={(mapping.metadata[h] ?? "") !== ""}
                        onChange={(e) => setMapping({ ...mapping, metadata: { ...mapping.metadata, [h]: e.currentTarget.checked ? metadataKeyOf(h) : "" } })}
                      />
                      <label for={`import-meta-${h}`}>{t("import.metadataColumn", { column: h })}</label>
                    </div>
                    {(mapping.metadata[h] ?? "") !== "" ? (
                      <Field label={t("import.metadataKey", { column: h })}>
                        <input value={mapping.metadata[h]} maxLength={40} onInput={(e) => setMapping({ ...mapping, metadata: { ...mapping.metadata, [h]: e.currentTarget.value } })} />
                      </Field>
                    ) : null}
                  </div>
                ))}
            </fieldset>
            <FormProblem problem={submit.problem} />
            <Button type="submit" variant="primary" busy={submit.busy}>
              {submitLabel(submit.busy, t("import.start"))}
            </Button>
          </>
        ) : null}
      </form>
    </Section>
  );
}

const STATE_TONE: Record<ImportJob["state"], "good" | "bad" | "warn" | "neutral" | "info"> = {
  uploading: "info",
  queued: "info",
  running: "info",
  completed: "good",
  failed: "bad",
  cancelled: "neutral",
};

function StateBadge(props: { state: ImportJob["state"] }) {
  return <Badge tone={STATE_TONE[props.state]}>{t(`import.state.${props.state}` as MessageKey)}</Badge>;
}

/** One job: its counts, polled while it runs, then its report. */
function Progress(props: { id: string; onSettled: () => void }) {
  const handle = useLoad(() => ok(api.GET("/api/v1/subscribers/imports/{id}", { params: { path: { id: props.id } } })), [props.id]);
  const running = handle.result.state === "ready" && RUNNING.has(handle.result.data.state);
  usePoll(running, POLL_MS, handle.reload);
  const [wasRunning, setWasRunning] = useState(false);
  useEffect(() => {
    if (running) setWasRunning(true);
    else if (wasRunning) {
      setWasRunning(false);
      props.onSettled();
    }
  }, [running]);
  return (
    <Section title={t("import.job")}>
      <Loadable handle={handle}>
        {(job) => (
          <>
            <p role="status">
              <StateBadge state={job.state} /> {running ? t("import.runningNote") : null}
              {job.failure ? ` ${t("import.failure", { reason: job.failure })}` : null}
            </p>
            {running ? <progress aria-label={t("import.progress")} /> : null}
            <dl class="facts">
              <dt>{t("import.rowsRead")}</dt>
              <dd>{formatNumber(job.rows_read)}</dd>
              <dt>{t("import.created")}</dt>
              <dd>{formatNumber(job.created)}</dd>
              <dt>{t("import.updated")}</dt>
              <dd>{formatNumber(job.updated)}</dd>
              <dt>{t("import.skipped")}</dt>
              <dd>{formatNumber(job.skipped)}</dd>
              <dt>{t("import.failed")}</dt>
              <dd>{formatNumber(job.failed)}</dd>
              <dt>{t("import.startedAt")}</dt>
              <dd>{formatDateTime(job.created_at)}</dd>
              <dt>{t("import.finishedAt")}</dt>
              <dd>{job.finished_at ? formatDateTime(job.finished_at) : "—"}</dd>
            </dl>
            {!running && job.state === "completed" ? (
              <p>
                <a href={href("/subscribers")}>{t("import.seeSubscribers")}</a>
              </p>
            ) : null}
            {!running && job.skipped + job.failed > 0 ? <Report id={job.id} /> : null}
          </>
        )}
      </Loadable>
    </Section>
  );
}

/** The per-row report: the first lines on the page, the whole as a download. */
function Report(props: { id: string }) {
  const handle = useLoad(async () => {
    const text = await ok(api.GET("/api/v1/subscribers/imports/{id}/errors", { params: { path: { id: props.id } }, parseAs: "text" }));
    return { text, rows: parseCsv(text, "comma").slice(1) };
  }, [props.id]);
  return (
    <>
      <h3>{t("import.report")}</h3>
      <Loadable handle={handle} isEmpty={(d) => d.rows.length === 0} empty={t("import.reportEmpty")}>
        {(report) => (
          <>
            <p>
              {report.rows.length > REPORT_ROWS ? t("import.reportFirst", { shown: formatNumber(REPORT_ROWS), count: formatNumber(report.rows.length) }) : null}{" "}
              <Button class="button-small" onClick={() => saveFile(`import-${props.id}-report.csv`, report.text, "text/csv;charset=utf-8")}>
                {t("import.reportDownload")}
              </Button>
            </p>
            <TableWrap label={t("import.report")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col" class="num">
                      {t("import.reportRow")}
                    </th>
                    <th scope="col">{t("import.reportField")}</th>
                    <th scope="col">{t("import.reportCode")}</th>
                    <th scope="col">{t("import.reportDetail")}</th>
                  </tr>
                </thead>
                <tbody>
                  {report.rows.slice(0, REPORT_ROWS).map((r, i) => (
                    <tr key={i}>
                      <td class="num">{r[0]}</td>
                      <td>{r[1]}</td>
                      <td>
                        <code>{r[2]}</code>
                      </td>
                      <td>{r[3]}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          </>
        )}
      </Loadable>
    </>
  );
}

function PastImports(props: { settled: number }) {
  // Read again when a job is started or opened (so it is in the list) and when it ends.
  const job = useLocation().query.get("job");
  const { handle, more, loadMore } = usePaged(
    (cursor) => ok(api.GET("/api/v1/subscribers/imports", { params: { query: { limit: 20, ...(cursor ? { cursor } : {}) } } })),
    [job, props.settled],
  );
  return (
    <Section title={t("import.past")}>
      <Loadable handle={handle} isEmpty={(d) => d.items.length === 0} empty={t("import.none")}>
        {(data) => (
          <>
            <TableWrap label={t("import.pastTable")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("import.startedAt")}</th>
                    <th scope="col">{t("import.state")}</th>
                    <th scope="col" class="num">
                      {t("import.rowsRead")}
                    </th>
                    <th scope="col" class="num">
                      {t("import.created")}
                    </th>
                    <th scope="col" class="num">
                      {t("import.problems")}
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((job) => (
                    <tr key={job.id}>
                      <td>
                        <a href={href("/subscribers/import", { job: job.id })}>{formatDateTime(job.created_at)}</a>
                      </td>
                      <td>
                        <StateBadge state={job.state} />
                      </td>
                      <td class="num">{formatNumber(job.rows_read)}</td>
                      <td class="num">{formatNumber(job.created)}</td>
                      <td class="num">{formatNumber(job.failed + job.skipped)}</td>
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
