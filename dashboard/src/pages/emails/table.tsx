import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { TableWrap } from "../../kit";
import { href } from "../../router";
import { EmailStatusBadge } from "./status";

type Email = components["schemas"]["Email"];

/** The columns an email table may show; the first one links to the email's page. */
export type EmailColumn = "queued" | "to" | "template" | "status" | "reason";

const HEADINGS: Record<EmailColumn, () => string> = {
  queued: () => t("emails.queuedAt"),
  to: () => t("emails.to"),
  template: () => t("emails.template"),
  status: () => t("emails.statusLabel"),
  reason: () => t("emails.reason"),
};

function cell(e: Email, column: EmailColumn) {
  switch (column) {
    case "queued":
      return formatDateTime(e.queued_at);
    case "to":
      return e.to ?? <em>{t("emails.erased")}</em>;
    case "template":
      return <code>{e.template_slug}</code>;
    case "status":
      return <EmailStatusBadge status={e.status} />;
    case "reason":
      return e.error ? <code class="reason">{e.error}</code> : "–";
  }
}

/** Emails as a table (the log, a subscriber's emails, a campaign's failures), each row linked to the message. */
export function EmailTable(props: { label: string; emails: readonly Email[]; columns: readonly [EmailColumn, ...EmailColumn[]] }) {
  const [first, ...rest] = props.columns;
  return (
    <TableWrap label={props.label}>
      <table>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c} scope="col">
                {HEADINGS[c]()}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.emails.map((e) => (
            <tr key={e.id}>
              <td>
                <a href={href(`/emails/${e.id}`)}>{cell(e, first)}</a>
              </td>
              {rest.map((c) => (
                <td key={c}>{cell(e, c)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
