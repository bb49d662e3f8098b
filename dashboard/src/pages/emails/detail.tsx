import { api, ok } from "../../api/client";
import type { components } from "../../api/schema";
import { formatDateTime, t } from "../../i18n";
import { Loadable, Page, Section, TableWrap, useLoad, usePoll } from "../../kit";
import { href } from "../../router";
import type { PageProps } from "../../routes";
import { EmailStatusBadge } from "./status";

type Email = components["schemas"]["Email"];

export default function EmailPage(props: PageProps) {
  const id = props.params.id!;
  const handle = useLoad(() => ok(api.GET("/api/v1/emails/{id}", { params: { path: { id } } })), [id]);
  const email = handle.result.state === "ready" ? handle.result.data : undefined;
  // A queued or deferred email still moves: ask again every two seconds until it has an outcome.
  usePoll(!!email && (email.status === "queued" || email.status === "deferred"), 2000, handle.reload);
  return (
    <Page title={t("emails.email")} actions={<a href={href("/emails")}>{t("emails.back")}</a>}>
      <Loadable handle={handle}>
        {(e) => (
          <>
            <Facts email={e} />
            <History email={e} />
            <Message email={e} />
          </>
        )}
      </Loadable>
    </Page>
  );
}

function Facts(props: { email: Email }) {
  const e = props.email;
  return (
    <Section title={t("emails.overview")}>
      <dl class="facts">
        <dt>{t("emails.statusLabel")}</dt>
        <dd>
          <EmailStatusBadge status={e.status} />
        </dd>
        {e.error ? (
          <>
            <dt>{t("emails.reason")}</dt>
            <dd>
              <code class="reason">{e.error}</code>
            </dd>
          </>
        ) : null}
        {e.bounce ? (
          <>
            <dt>{t("emails.bounce")}</dt>
            <dd>
              {t(e.bounce.type === "hard" ? "emails.bounceHard" : "emails.bounceSoft")}: <code class="reason">{e.bounce.diagnostic}</code>
            </dd>
          </>
        ) : null}
        <dt>{t("emails.to")}</dt>
        <dd>{e.to ?? <em>{t("emails.erased")}</em>}</dd>
        <dt>{t("emails.template")}</dt>
        <dd>
          <a href={href(`/templates/${e.template_id}`)}>{e.template_slug}</a> ({t("templates.versionBadge", { version: e.template_version })})
        </dd>
        <dt>{t("emails.provider")}</dt>
        <dd>{e.provider ?? "–"}</dd>
        <dt>{t("emails.attempts")}</dt>
        <dd>{e.attempts}</dd>
        <dt>{t("emails.queuedAt")}</dt>
        <dd>{formatDateTime(e.queued_at)}</dd>
        {e.sent_at ? (
          <>
            <dt>{t("emails.sentAt")}</dt>
            <dd>{formatDateTime(e.sent_at)}</dd>
          </>
        ) : null}
        {e.next_attempt_at ? (
          <>
            <dt>{t("emails.nextAttempt")}</dt>
            <dd>{formatDateTime(e.next_attempt_at)}</dd>
          </>
        ) : null}
        {e.message_id ? (
          <>
            <dt>{t("emails.messageId")}</dt>
            <dd>
              <code>{e.message_id}</code>
            </dd>
          </>
        ) : null}
      </dl>
    </Section>
  );
}

function History(props: { email: Email }) {
  return (
    <Section title={t("emails.history")}>
      <TableWrap label={t("emails.history")}>
        <table>
          <thead>
            <tr>
              <th scope="col">{t("emails.at")}</th>
              <th scope="col">{t("emails.statusLabel")}</th>
              <th scope="col">{t("emails.detail")}</th>
            </tr>
          </thead>
          <tbody>
            {props.email.history.map((h, i) => (
              <tr key={i}>
                <td>{formatDateTime(h.at)}</td>
                <td>
                  <EmailStatusBadge status={h.status} />
                </td>
                <td>{h.detail ? <code class="reason">{h.detail}</code> : "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </Section>
  );
}

/**
 * The message as sent: the sandbox keeps each one whole (GET
 * /emails/{id}/sandbox); a live provider's message is not kept by the
 * platform, which says so and names the template version it was made from.
 */
function Message(props: { email: Email }) {
  const e = props.email;
  if (e.provider !== "sandbox") {
    return (
      <Section title={t("emails.message")}>
        <p>{e.provider ? t("emails.bodyNotKept", { provider: e.provider }) : t("emails.notRenderedYet")}</p>
        <p>
          <a href={href(`/templates/${e.template_id}`)}>{t("emails.openTemplate", { version: e.template_version })}</a>
        </p>
      </Section>
    );
  }
  return <SandboxMessage id={e.id} />;
}

function SandboxMessage(props: { id: string }) {
  const handle = useLoad(() => ok(api.GET("/api/v1/emails/{id}/sandbox", { params: { path: { id: props.id } } })), [props.id]);
  return (
    <Section title={t("emails.message")}>
      <p class="hint">{t("emails.sandboxNote")}</p>
      <Loadable handle={handle}>
        {(m) => (
          <>
            <dl class="facts">
              <dt>{t("emails.from")}</dt>
              <dd>{m.from}</dd>
              <dt>{t("emails.to")}</dt>
              <dd>{m.to}</dd>
              <dt>{t("emails.subject")}</dt>
              <dd data-testid="sent-subject">{m.subject}</dd>
            </dl>
            <TableWrap label={t("emails.htmlPart")}>
              <iframe class="preview-frame desktop" sandbox="" srcdoc={m.html} title={t("emails.htmlPart")} />
            </TableWrap>
            <details>
              <summary>{t("emails.textPart")}</summary>
              <pre class="text-part">{m.text}</pre>
            </details>
            <details>
              <summary>{t("emails.headers")}</summary>
              <TableWrap label={t("emails.headers")}>
                <table>
                  <tbody>
                    {Object.entries(m.headers).map(([name, value]) => (
                      <tr key={name}>
                        <th scope="row">{name}</th>
                        <td>
                          <code>{value}</code>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            </details>
          </>
        )}
      </Loadable>
    </Section>
  );
}
