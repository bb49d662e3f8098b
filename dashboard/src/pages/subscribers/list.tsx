import { useState } from "preact/hooks";
import { api, ok } from "../../api/client";
import { formatDateTime, formatNumber, t } from "../../i18n";
import { Button, FormProblem, LoadMore, Loadable, Page, TableWrap, fileDate, formValue, saveFile, useLoad, usePaged, useSubmit } from "../../kit";
import { href, setQuery, useLocation } from "../../router";
import { useCanWrite } from "../../session";
import { toCsv } from "./csv";
import { STATUSES, StatusBadge, allPages, statusLabel, type Subscriber, type SubscriberStatus } from "./shared";

const PAGE = 50;
/** Pages of an export: the API's largest. */
const EXPORT_PAGE = 500;

interface Filter {
  email?: string;
  tag?: string;
  status?: SubscriberStatus;
}

function readFilter(query: URLSearchParams): Filter {
  const status = query.get("status");
  return {
    email: query.get("email") || undefined,
    tag: query.get("tag") || undefined,
    status: STATUSES.includes(status as SubscriberStatus) ? (status as SubscriberStatus) : undefined,
  };
}

function listPage(filter: Filter, cursor: string | undefined, limit: number) {
  return ok(api.GET("/api/v1/subscribers", { params: { query: { limit, ...filter, ...(cursor ? { cursor } : {}) } } }));
}

/** The export's columns: the fixed ones, then every metadata key met (a key named like a fixed column gets "metadata."). */
function exportRows(subscribers: readonly Subscriber[]): string[][] {
  const fixed = ["email", "status", "locale", "tags", "created_at"];
  const keys = [...new Set(subscribers.flatMap((s) => Object.keys(s.metadata)))].sort();
  const header = [...fixed, ...keys.map((k) => (fixed.includes(k) ? `metadata.${k}` : k))];
  return [
    header,
    ...subscribers.map((s) => [s.email, s.status, s.locale ?? "", s.tags.join(";"), s.created_at, ...keys.map((k) => (k in s.metadata ? String(s.metadata[k]) : ""))]),
  ];
}

export default function SubscriberList() {
  const { query } = useLocation();
  const filter = readFilter(query);
  const canWrite = useCanWrite("audience");
  const { handle, more, loadMore } = usePaged((cursor) => listPage(filter, cursor, PAGE), [filter.email, filter.tag, filter.status]);
  // The tag filter's choices (the first 500 tags: a longer list is typed in the search instead).
  const tags = useLoad(() => ok(api.GET("/api/v1/tags", { params: { query: { limit: 500 } } })), []);
  const exporting = useSubmit();
  const [exported, setExported] = useState<number | undefined>();
  const filtered = Boolean(filter.email || filter.tag || filter.status);

  const search = (e: Event) => {
    e.preventDefault();
    setQuery({ email: formValue(e.currentTarget as HTMLFormElement, "email").trim() || undefined });
  };
  const exportCsv = () =>
    exporting.run(async () => {
      setExported(0);
      const all = await allPages((cursor) => listPage(filter, cursor, EXPORT_PAGE), setExported);
      // The address column is written as it is: an address is no formula, and a re-import must read it unchanged.
      saveFile(`subscribers-${fileDate()}.csv`, toCsv(exportRows(all), new Set([0])), "text/csv;charset=utf-8");
      setExported(undefined);
    });

  return (
    <Page
      title={t("subscribers.title")}
      actions={
        <>
          {canWrite ? (
            <>
              <a class="button button-primary" href={href("/subscribers/new")}>
                {t("subscribers.add")}
              </a>
              <a class="button" href={href("/subscribers/import")}>
                {t("subscribers.import")}
              </a>
            </>
          ) : null}
          <Button onClick={exportCsv} busy={exporting.busy}>
            {exporting.busy && exported !== undefined ? t("subscribers.exporting", { count: formatNumber(exported) }) : t("subscribers.export")}
          </Button>
        </>
      }
    >
      <FormProblem problem={exporting.problem} />
      <form class="toolbar" role="search" aria-label={t("subscribers.filters")} onSubmit={search}>
        <div class="field">
          <label for="subscriber-search">{t("subscribers.search")}</label>
          <input id="subscriber-search" name="email" type="search" defaultValue={filter.email ?? ""} key={filter.email ?? ""} autoComplete="off" placeholder="ann@" />
        </div>
        <div class="field">
          <label for="subscriber-tag">{t("subscribers.tag")}</label>
          <select id="subscriber-tag" value={filter.tag ?? ""} onChange={(e) => setQuery({ tag: e.currentTarget.value || undefined })}>
            <option value="">{t("subscribers.anyTag")}</option>
            {tags.result.state === "ready"
              ? tags.result.data.items.map((tag) => (
                  <option key={tag.id} value={tag.name}>
                    {tag.name}
                  </option>
                ))
              : null}
            {filter.tag && tags.result.state === "ready" && !tags.result.data.items.some((x) => x.name === filter.tag) ? <option value={filter.tag}>{filter.tag}</option> : null}
          </select>
        </div>
        <div class="field">
          <label for="subscriber-status">{t("subscribers.statusFilter")}</label>
          <select id="subscriber-status" value={filter.status ?? ""} onChange={(e) => setQuery({ status: e.currentTarget.value || undefined })}>
            <option value="">{t("subscribers.anyStatus")}</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {statusLabel(s)}
              </option>
            ))}
          </select>
        </div>
        <Button type="submit">{t("subscribers.searchAction")}</Button>
        {filtered ? (
          <Button variant="plain" onClick={() => setQuery({ email: undefined, tag: undefined, status: undefined })}>
            {t("subscribers.clearFilters")}
          </Button>
        ) : null}
      </form>
      <Loadable
        handle={handle}
        isEmpty={(d) => d.items.length === 0}
        empty={
          filtered ? (
            <p>{t("subscribers.noMatch")}</p>
          ) : (
            <>
              <p>{t("subscribers.none")}</p>
              {canWrite ? (
                <p>
                  <a href={href("/subscribers/new")}>{t("subscribers.add")}</a> · <a href={href("/subscribers/import")}>{t("subscribers.import")}</a>
                </p>
              ) : null}
            </>
          )
        }
      >
        {(data) => (
          <>
            <TableWrap label={t("subscribers.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("field.email")}</th>
                    <th scope="col">{t("subscribers.status")}</th>
                    <th scope="col">{t("subscribers.tags")}</th>
                    <th scope="col">{t("subscribers.created")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((s) => (
                    <tr key={s.id}>
                      <td>
                        <a href={href(`/subscribers/${s.id}`)}>{s.email}</a>
                      </td>
                      <td>
                        <StatusBadge status={s.status} />
                      </td>
                      <td>{s.tags.join(", ")}</td>
                      <td>{formatDateTime(s.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
            <LoadMore next={data.next} more={more} onClick={loadMore} />
          </>
        )}
      </Loadable>
    </Page>
  );
}
