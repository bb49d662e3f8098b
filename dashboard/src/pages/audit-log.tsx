import { api, ok } from "../api/client";
import type { components } from "../api/schema";
import { formatDateTime, t } from "../i18n";
import { Badge, LoadMore, Loadable, Page, TableWrap, usePaged } from "../kit";

type Entry = components["schemas"]["AuditEntry"];

/** Who did it, in words: the member's address, an API key's id, or the platform's operator. */
function actorText(actor: Entry["actor"]): string {
  if (actor.type === "member") return actor.email ?? actor.id;
  if (actor.type === "operator") return t("auditLog.operator");
  return t("auditLog.apiKey", { id: actor.id });
}

/** Every change made in the account (and every sign-in), newest first: who, what, when, from where, and how it ended. */
export default function AuditLog() {
  const { handle, more, loadMore } = usePaged(
    (cursor) => ok(api.GET("/api/v1/audit-log", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })),
    [],
  );
  return (
    <Page title={t("auditLog.title")} description={t("auditLog.intro")}>
      <Loadable handle={handle} isEmpty={(data) => data.items.length === 0} empty={t("auditLog.empty")}>
        {(data) => (
          <>
            <TableWrap label={t("auditLog.title")}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("auditLog.when")}</th>
                    <th scope="col">{t("auditLog.who")}</th>
                    <th scope="col">{t("auditLog.what")}</th>
                    <th scope="col">{t("auditLog.result")}</th>
                    <th scope="col">{t("auditLog.mode")}</th>
                    <th scope="col">{t("auditLog.from")}</th>
                  </tr>
                </thead>
                <tbody>
                  {data.items.map((entry) => (
                    <tr key={entry.id}>
                      <td>{formatDateTime(entry.at)}</td>
                      <td class="wrap">{actorText(entry.actor)}</td>
                      <td>
                        <code>{entry.action}</code>
                        <span class="hint block">
                          {entry.method} <code>{entry.path}</code>
                        </span>
                      </td>
                      <td>
                        <Badge tone={entry.status < 400 ? "good" : "bad"}>{String(entry.status)}</Badge>
                      </td>
                      <td>{entry.mode ? t(`shell.mode.${entry.mode}`) : "—"}</td>
                      <td>{entry.ip || t("auditLog.unknown")}</td>
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
