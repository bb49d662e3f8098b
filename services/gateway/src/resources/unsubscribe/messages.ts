import type { Locale } from "@emailsvc/runtime";

// The one-click pages' texts in the portal's languages (@emailsvc/runtime's
// LOCALES). They say exactly what the link does: the subscriber gets no
// marketing email at all from the sender any more (every list), while mail
// they asked for, such as receipts, still arrives. `{sender}` is the
// account's name for its subscribers; the `_anonymous` variants are for an
// account that has none. English is the reference: every language has
// every key (the compiler checks).

const en = {
  confirm_title: "Unsubscribe",
  confirm_heading: "Unsubscribe from {sender}?",
  confirm_heading_anonymous: "Unsubscribe from all marketing email?",
  confirm_text: "You will get no more marketing email from {sender}: no newsletters and no offers, from any of its lists.",
  confirm_text_anonymous: "You will get no more marketing email from this sender: no newsletters and no offers, from any of its lists.",
  kept_text: "Messages you asked for, such as receipts or password resets, still arrive.",
  confirm_button: "Unsubscribe from all marketing email",
  done_title: "Unsubscribed",
  done_heading: "You are unsubscribed",
  done_text: "You will get no more marketing email from {sender}, from any of its lists.",
  done_text_anonymous: "You will get no more marketing email from this sender, from any of its lists.",
  invalid_title: "Link not valid",
  invalid_heading: "This link is not valid",
  invalid_text: "It may have expired or been changed, and nothing was changed. Use the unsubscribe link of a more recent email, or reply to the sender.",
  error_title: "Something went wrong",
  error_heading: "Something went wrong",
  error_text: "Nothing was changed. Please try again in a moment.",
} as const;

type Messages = { readonly [K in keyof typeof en]: string };

const de: Messages = {
  confirm_title: "Abbestellen",
  confirm_heading: "Von {sender} abmelden?",
  confirm_heading_anonymous: "Alle Marketing-E-Mails abbestellen?",
  confirm_text: "Sie erhalten keine Marketing-E-Mails mehr von {sender}: weder Newsletter noch Angebote, aus keiner Liste.",
  confirm_text_anonymous: "Sie erhalten keine Marketing-E-Mails mehr von diesem Absender: weder Newsletter noch Angebote, aus keiner Liste.",
  kept_text: "Nachrichten, die Sie angefordert haben, etwa Quittungen oder das Zurücksetzen eines Passworts, erhalten Sie weiterhin.",
  confirm_button: "Alle Marketing-E-Mails abbestellen",
  done_title: "Abgemeldet",
  done_heading: "Sie sind abgemeldet",
  done_text: "Sie erhalten keine Marketing-E-Mails mehr von {sender}, aus keiner Liste.",
  done_text_anonymous: "Sie erhalten keine Marketing-E-Mails mehr von diesem Absender, aus keiner Liste.",
  invalid_title: "Link ungültig",
  invalid_heading: "Dieser Link ist ungültig",
  invalid_text: "Er ist vielleicht abgelaufen oder wurde verändert; es wurde nichts geändert. Verwenden Sie den Abmeldelink einer neueren E-Mail oder antworten Sie dem Absender.",
  error_title: "Etwas ist schiefgelaufen",
  error_heading: "Etwas ist schiefgelaufen",
  error_text: "Es wurde nichts geändert. Bitte versuchen Sie es gleich noch einmal.",
};

const fr: Messages = {
  confirm_title: "Se désabonner",
  confirm_heading: "Se désabonner de {sender} ?",
  confirm_heading_anonymous: "Se désabonner de tous les e-mails marketing ?",
  confirm_text: "Vous ne recevrez plus d’e-mails marketing de {sender} : ni newsletters ni offres, d’aucune de ses listes.",
  confirm_text_anonymous: "Vous ne recevrez plus d’e-mails marketing de cet expéditeur : ni newsletters ni offres, d’aucune de ses listes.",
  kept_text: "Les messages que vous avez demandés, comme les reçus ou les réinitialisations de mot de passe, arrivent toujours.",
  confirm_button: "Me désabonner de tous les e-mails marketing",
  done_title: "Désabonné",
  done_heading: "Vous êtes désabonné",
  done_text: "Vous ne recevrez plus d’e-mails marketing de {sender}, d’aucune de ses listes.",
  done_text_anonymous: "Vous ne recevrez plus d’e-mails marketing de cet expéditeur, d’aucune de ses listes.",
  invalid_title: "Lien non valide",
  invalid_heading: "Ce lien n’est pas valide",
  invalid_text: "Il a peut-être expiré ou été modifié ; rien n’a été changé. Utilisez le lien de désabonnement d’un e-mail plus récent, ou répondez à l’expéditeur.",
  error_title: "Une erreur s’est produite",
  error_heading: "Une erreur s’est produite",
  error_text: "Rien n’a été changé. Veuillez réessayer dans un instant.",
};

const it: Messages = {
  confirm_title: "Annulla l’iscrizione",
  confirm_heading: "Annullare l’iscrizione a {sender}?",
  confirm_heading_anonymous: "Annullare l’iscrizione a tutte le e-mail di marketing?",
  confirm_text: "Non riceverai più e-mail di marketing da {sender}: né newsletter né offerte, da nessuna delle sue liste.",
  confirm_text_anonymous: "Non riceverai più e-mail di marketing da questo mittente: né newsletter né offerte, da nessuna delle sue liste.",
  kept_text: "I messaggi che hai richiesto, come ricevute o reimpostazioni della password, continuano ad arrivare.",
  confirm_button: "Annulla l’iscrizione a tutte le e-mail di marketing",
  done_title: "Iscrizione annullata",
  done_heading: "La tua iscrizione è annullata",
  done_text: "Non riceverai più e-mail di marketing da {sender}, da nessuna delle sue liste.",
  done_text_anonymous: "Non riceverai più e-mail di marketing da questo mittente, da nessuna delle sue liste.",
  invalid_title: "Link non valido",
  invalid_heading: "Questo link non è valido",
  invalid_text: "Potrebbe essere scaduto o modificato; non è stato cambiato nulla. Usa il link di disiscrizione di un’e-mail più recente, oppure rispondi al mittente.",
  error_title: "Si è verificato un errore",
  error_heading: "Si è verificato un errore",
  error_text: "Non è stato cambiato nulla. Riprova tra un momento.",
};

export type MessageKey = keyof typeof en;

export const MESSAGES: Readonly<Record<Locale, Messages>> = { en, de, fr, it };

/** A message with `{sender}` filled in (as text: the page escapes it). */
export function message(locale: Locale, key: MessageKey, sender = ""): string {
  return MESSAGES[locale][key].replace("{sender}", sender);
}
