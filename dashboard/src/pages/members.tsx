import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { components } from "../api/schema";
import { formatDateTime, t } from "../i18n";
import { Button, ConfirmDialog, Field, FormProblem, formValue, LoadMore, Loadable, notify, Page, Section, submitLabel, TableWrap, usePaged, useSubmit } from "../kit";
import { ROLES, useCanWrite, useSession, type Role } from "../session";

type Member = components["schemas"]["Member"];
type Invitation = components["schemas"]["Invitation"];

/**
 * The account's people: members with their roles (change, remove), open
 * invitations (withdraw), and a new invitation by email. What the API would
 * refuse is not offered: an admin neither makes, changes nor removes an
 * owner (only an owner does), and nobody changes or removes themself here.
 */
export default function Members() {
  const session = useSession()!;
  const canWrite = useCanWrite("members");
  const isOwner = session.member.role === "owner";
  /** The roles the signed-in member may give. */
  const grantable: readonly Role[] = isOwner ? ROLES : ROLES.filter((role) => role !== "owner");
  const members = usePaged((cursor) => ok(api.GET("/api/v1/members", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })), []);
  const invitations = usePaged((cursor) => ok(api.GET("/api/v1/invitations", { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })), []);
  const invite = useSubmit();
  const change = useSubmit();
  const [removing, setRemoving] = useState<Member | undefined>();
  const [withdrawing, setWithdrawing] = useState<Invitation | undefined>();

  /** Whether the signed-in member may change or remove this member. */
  const manageable = (member: Member) => canWrite && member.id !== session.member.id && (isOwner || member.role !== "owner");

  const onInvite = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const email = formValue(form, "email").trim();
    const role = formValue(form, "role") as Role;
    const created = await invite.run(() => ok(api.POST("/api/v1/invitations", { body: { email, role } })));
    if (!created) return;
    form.reset();
    notify(t("members.invited", { email }));
    invitations.handle.reload();
  };
  const onRole = async (member: Member, role: Role) => {
    const updated = await change.run(() => ok(api.PATCH("/api/v1/members/{id}", { params: { path: { id: member.id } }, body: { role } })));
    if (!updated) return members.handle.reload();
    notify(t("members.roleChanged", { name: member.name || member.email, role: t(`role.${role}`) }));
    members.handle.reload();
  };
  const onRemove = async () => {
    const member = removing;
    if (!member) return;
    const done = await change.run(async () => (await ok(api.DELETE("/api/v1/members/{id}", { params: { path: { id: member.id } } })), true));
    setRemoving(undefined);
    if (!done) return;
    notify(t("members.removed", { name: member.name || member.email }));
    members.handle.reload();
  };
  const onWithdraw = async () => {
    const invitation = withdrawing;
    if (!invitation) return;
    const done = await change.run(async () => (await ok(api.DELETE("/api/v1/invitations/{id}", { params: { path: { id: invitation.id } } })), true));
    setWithdrawing(undefined);
    if (!done) return;
    notify(t("members.withdrawn", { email: invitation.email ?? "" }));
    invitations.handle.reload();
  };

  return (
    <Page title={t("members.title")} description={t("members.intro")}>
      {canWrite ? (
        <Section title={t("members.inviteTitle")}>
          <form onSubmit={onInvite} class="toolbar">
            <Field label={t("field.email")} error={invite.problem?.field("email")}>
              <input name="email" type="email" required maxLength={254} autoComplete="off" />
            </Field>
            <Field label={t("field.role")} error={invite.problem?.field("role")}>
              <select name="role" defaultValue="viewer">
                {grantable.map((role) => (
                  <option key={role} value={role}>
                    {t(`role.${role}`)}
                  </option>
                ))}
              </select>
            </Field>
            <Button type="submit" variant="primary" busy={invite.busy}>
              {submitLabel(invite.busy, t("members.invite"))}
            </Button>
          </form>
          <p class="hint">{t("members.inviteHint")}</p>
          <FormProblem problem={invite.problem} />
        </Section>
      ) : null}
      <Section title={t("members.listTitle")}>
        <FormProblem problem={change.problem} />
        <Loadable handle={members.handle} isEmpty={(data) => data.items.length === 0} empty={t("members.empty")}>
          {(data) => (
            <>
              <TableWrap label={t("members.listTitle")}>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">{t("field.name")}</th>
                      <th scope="col">{t("field.email")}</th>
                      <th scope="col">{t("field.role")}</th>
                      <th scope="col">{t("members.joined")}</th>
                      {canWrite ? <th scope="col">{t("members.actions")}</th> : null}
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((member) => (
                      <tr key={member.id}>
                        <td>
                          {member.name}
                          {member.id === session.member.id ? <span class="hint"> {t("members.you")}</span> : null}
                        </td>
                        <td>{member.email}</td>
                        <td>
                          {manageable(member) ? (
                            <select
                              aria-label={t("members.roleOf", { name: member.name || member.email })}
                              value={member.role}
                              disabled={change.busy}
                              onChange={(e) => onRole(member, e.currentTarget.value as Role)}
                            >
                              {grantable.map((role) => (
                                <option key={role} value={role}>
                                  {t(`role.${role}`)}
                                </option>
                              ))}
                            </select>
                          ) : (
                            t(`role.${member.role}`)
                          )}
                        </td>
                        <td>{formatDateTime(member.created_at)}</td>
                        {canWrite ? (
                          <td>
                            {manageable(member) ? (
                              <Button class="button-small" variant="danger" onClick={() => setRemoving(member)} aria-label={t("members.removeLabel", { name: member.name || member.email })}>
                                {t("members.remove")}
                              </Button>
                            ) : null}
                          </td>
                        ) : null}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
              <LoadMore next={data.next} more={members.more} onClick={members.loadMore} />
            </>
          )}
        </Loadable>
      </Section>
      <Section title={t("members.invitationsTitle")}>
        <Loadable handle={invitations.handle} isEmpty={(data) => data.items.length === 0} empty={t("members.invitationsEmpty")}>
          {(data) => (
            <>
              <TableWrap label={t("members.invitationsTitle")}>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">{t("field.email")}</th>
                      <th scope="col">{t("field.role")}</th>
                      <th scope="col">{t("members.expires")}</th>
                      {canWrite ? <th scope="col">{t("members.actions")}</th> : null}
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((invitation) => (
                      <tr key={invitation.id}>
                        <td>{invitation.email ?? <span class="hint">{t("members.setupInvitation")}</span>}</td>
                        <td>{t(`role.${invitation.role}`)}</td>
                        <td>{formatDateTime(invitation.expires_at)}</td>
                        {canWrite ? (
                          <td>
                            {isOwner || invitation.role !== "owner" ? (
                              <Button class="button-small" onClick={() => setWithdrawing(invitation)} aria-label={t("members.withdrawLabel", { email: invitation.email ?? t("members.setupInvitation") })}>
                                {t("members.withdraw")}
                              </Button>
                            ) : null}
                          </td>
                        ) : null}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
              <LoadMore next={data.next} more={invitations.more} onClick={invitations.loadMore} />
            </>
          )}
        </Loadable>
      </Section>
      <ConfirmDialog
        open={removing !== undefined}
        title={t("members.removeTitle")}
        confirmLabel={t("members.remove")}
        danger
        busy={change.busy}
        confirmText={removing?.email}
        onConfirm={onRemove}
        onCancel={() => setRemoving(undefined)}
      >
        <p>{t("members.removeText", { name: removing ? removing.name || removing.email : "" })}</p>
      </ConfirmDialog>
      <ConfirmDialog
        open={withdrawing !== undefined}
        title={t("members.withdrawTitle")}
        confirmLabel={t("members.withdraw")}
        busy={change.busy}
        onConfirm={onWithdraw}
        onCancel={() => setWithdrawing(undefined)}
      >
        <p>{t("members.withdrawText")}</p>
      </ConfirmDialog>
    </Page>
  );
}
