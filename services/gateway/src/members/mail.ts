import type { Transport } from "@connectrpc/connect";
import { platformMailer, type PlatformTemplate } from "@emailsvc/grpc";
import { callHeaders } from "@emailsvc/tenancy";
import type { Locale } from "@emailsvc/text";

// The members' mail: invitations and password resets, sent through the
// platform itself (delivery's SendEmail in the account's live tenant, From
// EMAIL_FROM, transactional), with the platform's own templates made in the
// account on first use (@emailsvc/grpc platformMailer, as the subscribers
// service does for its confirmation mail). The words go as variables in the
// mail's language, so one template serves every language and an account that
// edits it keeps them.

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

// The words in the platform's languages. A member has no stored language:
// an invitation speaks the inviter's (their browser's Accept-Language), a
// reset the language of the browser that asked for it.
const INVITATION: Record<Locale, (account: string, role: string) => Words> = {
  en: (account, role) => ({
    subject: `You are invited to ${account}`,
    heading: `Join ${account}`,
    intro: `You have been invited to the dashboard of ${account} as ${role}. Choose your name and password to accept; the link works once, for 7 days.`,
    button: "Accept the invitation",
    ignore: "If you did not expect this, ignore this email: nothing happens without a click.",
  }),
  de: (account, role) => ({
    subject: `Einladung zu ${account}`,
    heading: `Willkommen bei ${account}`,
    intro: `Sie wurden als ${role} in das Dashboard von ${account} eingeladen. Wählen Sie Ihren Namen und Ihr Passwort, um die Einladung anzunehmen; der Link gilt einmal, 7 Tage lang.`,
    button: "Einladung annehmen",
    ignore: "Wenn Sie das nicht erwartet haben, ignorieren Sie diese E-Mail: Ohne Klick geschieht nichts.",
  }),
  fr: (account, role) => ({
    subject: `Invitation à ${account}`,
    heading: `Rejoignez ${account}`,
    intro: `Vous êtes invité au tableau de bord de ${account} en tant que ${role}. Choisissez votre nom et votre mot de passe pour accepter ; le lien fonctionne une fois, pendant 7 jours.`,
    button: "Accepter l'invitation",
    ignore: "Si vous ne vous y attendiez pas, ignorez cet e-mail : rien ne se passe sans un clic.",
  }),
  it: (account, role) => ({
    subject: `Invito a ${account}`,
    heading: `Unisciti a ${account}`,
    intro: `Sei stato invitato nella dashboard di ${account} come ${role}. Scegli il tuo nome e la tua password per accettare; il link funziona una volta, per 7 giorni.`,
    button: "Accetta l'invito",
    ignore: "Se non te lo aspettavi, ignora questa e-mail: senza un clic non succede nulla.",
  }),
};

const RESET: Record<Locale, Words> = {
  en: {
    subject: "Reset your dashboard password",
    heading: "Reset your password",
    intro: "Someone (hopefully you) asked to reset the password of your dashboard account. The link works once, for one hour; a new password signs you out everywhere.",
    button: "Choose a new password",
    ignore: "If you did not ask for this, ignore this email: your password stays as it is.",
  },
  de: {
    subject: "Dashboard-Passwort zurücksetzen",
    heading: "Passwort zurücksetzen",
    intro: "Jemand (hoffentlich Sie) möchte das Passwort Ihres Dashboard-Kontos zurücksetzen. Der Link gilt einmal, eine Stunde lang; ein neues Passwort meldet Sie überall ab.",
    button: "Neues Passwort wählen",
    ignore: "Wenn Sie das nicht waren, ignorieren Sie diese E-Mail: Ihr Passwort bleibt unverändert.",
  },
  fr: {
    subject: "Réinitialisez votre mot de passe",
    heading: "Réinitialiser le mot de passe",
    intro: "Quelqu'un (vous, espérons-le) a demandé à réinitialiser le mot de passe de votre compte. Le lien fonctionne une fois, pendant une heure ; un nouveau mot de passe vous déconnecte partout.",
    button: "Choisir un nouveau mot de passe",
    ignore: "Si vous n'êtes pas à l'origine de cette demande, ignorez cet e-mail : votre mot de passe reste inchangé.",
  },
  it: {
    subject: "Reimposta la password della dashboard",
    heading: "Reimposta la password",
    intro: "Qualcuno (speriamo tu) ha chiesto di reimpostare la password del tuo account. Il link funziona una volta, per un'ora; una nuova password ti disconnette ovunque.",
    button: "Scegli una nuova password",
    ignore: "Se non sei stato tu, ignora questa e-mail: la tua password resta invariata.",
  },
};

export interface MemberMail {
  accountId: string;
  /** The language of the mail's words. */
  locale: Locale;
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
    invitation: (mail) => send(PLATFORM_INVITATION_TEMPLATE, mail, INVITATION[mail.locale](mail.accountName, mail.role)),
    passwordReset: (mail) => send(PLATFORM_PASSWORD_RESET_TEMPLATE, mail, RESET[mail.locale]),
  };
}
