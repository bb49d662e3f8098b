import type { Locale } from "@emailsvc/text";

// The confirmation mail of double opt-in: the platform's own template and its
// words in the platform's languages. One template serves every language: the
// words come as variables in the subscriber's language, so that an account's
// template list holds one entry and an account's own template gets the same
// variables. Pure.

/** The slug of the platform's confirmation template, created in an account on its first confirmation mail. */
export const PLATFORM_CONFIRMATION_SLUG = "platform-double-opt-in";

export const PLATFORM_CONFIRMATION_TEMPLATE = {
  name: "Confirm your subscription (platform default)",
  subject: "{{subject}}",
  // Transactional: a pending subscriber gets no marketing mail, and this mail is what they asked for.
  mjml: [
    "<mjml>",
    "  <mj-body>",
    "    <mj-section>",
    "      <mj-column>",
    '        <mj-text font-size="20px">{{heading}}</mj-text>',
    "        <mj-text>{{intro}}</mj-text>",
    '        <mj-button href="{{confirmation_url}}">{{button}}</mj-button>',
    "        <mj-text>{{ignore}}</mj-text>",
    "      </mj-column>",
    "    </mj-section>",
    "  </mj-body>",
    "</mjml>",
  ].join("\n"),
} as const;

export interface ConfirmationWords {
  subject: string;
  heading: string;
  intro: string;
  button: string;
  ignore: string;
}

const WORDS: Record<Locale, ConfirmationWords> = {
  en: {
    subject: "Please confirm your subscription",
    heading: "Confirm your subscription",
    intro: "You (or someone using your address) asked to receive our emails. Please confirm that this is your address.",
    button: "Yes, subscribe me",
    ignore: "If you did not ask for this, ignore this email: you will not be subscribed, and we will delete your address.",
  },
  de: {
    subject: "Bitte bestätigen Sie Ihr Abonnement",
    heading: "Abonnement bestätigen",
    intro: "Sie (oder jemand mit Ihrer Adresse) möchten unsere E-Mails erhalten. Bitte bestätigen Sie, dass dies Ihre Adresse ist.",
    button: "Ja, ich möchte mich anmelden",
    ignore: "Wenn Sie das nicht waren, ignorieren Sie diese E-Mail: Sie werden nicht angemeldet, und wir löschen Ihre Adresse.",
  },
  fr: {
    subject: "Veuillez confirmer votre abonnement",
    heading: "Confirmez votre abonnement",
    intro: "Vous (ou quelqu'un utilisant votre adresse) avez demandé à recevoir nos e-mails. Veuillez confirmer qu'il s'agit bien de votre adresse.",
    button: "Oui, je m'abonne",
    ignore: "Si vous n'êtes pas à l'origine de cette demande, ignorez cet e-mail : vous ne serez pas abonné, et nous supprimerons votre adresse.",
  },
  it: {
    subject: "Conferma la tua iscrizione",
    heading: "Conferma la tua iscrizione",
    intro: "Tu (o qualcuno che usa il tuo indirizzo) hai chiesto di ricevere le nostre e-mail. Conferma che questo è il tuo indirizzo.",
    button: "Sì, iscrivimi",
    ignore: "Se non sei stato tu, ignora questa e-mail: non verrai iscritto e cancelleremo il tuo indirizzo.",
  },
};

/** The words of the mail in the subscriber's language (English when they have none). */
export function confirmationWords(locale: Locale | ""): ConfirmationWords {
  return WORDS[locale || "en"];
}
