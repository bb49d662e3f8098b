import type { Transport } from "@connectrpc/connect";
import { platformMailer, type PlatformTemplate } from "@emailsvc/grpc";
import { callHeaders } from "@emailsvc/tenancy";

// The members' mail: invitations and password resets, sent through the
// platform itself (delivery's SendEmail in the account's live tenant, From
// EMAIL_FROM, transactional), with the platform's own templates made in the
// account on first use (@emailsvc/grpc platformMailer, as the subscribers
// service does for its confirmation mail). The words go as variables, so an
// account that edits the template keeps them.

export const PLATFORM_INVITATION_TEMPLATE: PlatformTemplate = {
  slug: "platform-member-invitation",
  name: "Dashboard invitation (platform default)",
  subject: "{{subject}}",
  mjml: [
    "<mjml>",
    "  <mj-body>",
    "    <mj-section>",
    "      <mj-column>",
    '        <mj-text font-size="20px">{{heading}}</mj-text>',
    "        <mj-text>{{intro}}</mj-text>",
    '        <mj-button href="{{link_url}}">{{button}}</mj-button>',
    "        <mj-text>{{ignore}}</mj-text>",
    "      </mj-column>",
    "    </mj-section>",
    "  </mj-body>",
    "</mjml>",
  ].join("\n"),
};

export const PLATFORM_PASSWORD_RESET_TEMPLATE: PlatformTemplate = {
  ...PLATFORM_INVITATION_TEMPLATE,
  slug: "platform-password-reset",
  name: "Dashboard password reset (platform default)",
};

interface Words {
  subject: string;
  heading: string;
  intro: string;
  button: string;
  ignore: string;
}

// English for now: a member has no language yet (the dashboard's own is the browser's).
const INVITATION = (account: string, role: string): Words => ({
  subject: `You are invited to ${account}`,
  heading: `Join ${account}`,
  intro: `You have been invited to the dashboard of ${account} as ${role}. Choose your name and password to accept; the link works for 7 days, once.`,
  button: "Accept the invitation",
  ignore: "If you did not expect this, ignore this email: nothing happens without a click.",
});

const RESET: Words = {
  subject: "Reset your dashboard password",
  heading: "Reset your password",
  intro: "Someone (hopefully you) asked to reset the password of your dashboard account. The link works for one hour, once; setting a new password signs you out everywhere.",
  button: "Choose a new password",
  ignore: "If you did not ask for this, ignore this email: your password stays as it is.",
};

export interface MemberMail {
  accountId: string;
  to: string;
  url: string;
  /** Delivery's idempotency key: the invitation's or reset's id. */
  idempotencyKey: string;
}

export interface MemberMailer {
  invitation(mail: MemberMail & { accountName: string; role: string }): Promise<void>;
  passwordReset(mail: MemberMail): Promise<void>;
}

export function grpcMemberMailer(transports: { delivery: Transport; templates: Transport | undefined }, timeoutMs: number): MemberMailer {
  const mailer = platformMailer(transports);
  const send = async (template: PlatformTemplate, mail: MemberMail, words: Words) => {
    const call = { tenant: { accountId: mail.accountId, mode: "live" as const }, actor: "service:gateway", requestId: mail.idempotencyKey };
    await mailer.send({ template, to: mail.to, variables: { ...words, link_url: mail.url }, idempotencyKey: mail.idempotencyKey }, { headers: callHeaders(call), timeoutMs });
  };
  return {
    invitation: (mail) => send(PLATFORM_INVITATION_TEMPLATE, mail, INVITATION(mail.accountName, mail.role)),
    passwordReset: (mail) => send(PLATFORM_PASSWORD_RESET_TEMPLATE, mail, RESET),
  };
}
