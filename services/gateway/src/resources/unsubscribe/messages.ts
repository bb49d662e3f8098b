import type { Locale } from "@emailsvc/text";

// The one-click pages' texts in the portal's languages (@emailsvc/text's
// LOCALES). They say exactly what the link did (or that it had been done
// before), and what is wrong with a request no retry can fix: the subscriber gets no
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
  done_already_text: "This had been done before: you were unsubscribed already.",
  done_text: "You will get no more marketing email from {sender}, from any of its lists.",
  done_text_anonymous: "You will get no more marketing email from this sender, from any of its lists.",
  request_title: "Not an unsubscribe request",
  request_heading: "This address only takes the one-click unsubscribe request",
  request_text: "Your email program sent something else, so nothing was changed, and sending it again will not help. Use the unsubscribe button of your email program, or open the unsubscribe link of the email in your browser.",
  busy_title: "Too many requests",
  busy_heading: "Too many requests",
  busy_text: "Nothing was changed. Please try again in a few minutes.",
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
  done_already_text: "Das war schon geschehen: Sie waren bereits abgemeldet.",
  done_text: "Sie erhalten keine Marketing-E-Mails mehr von {sender}, aus keiner Liste.",
  done_text_anonymous: "Sie erhalten keine Marketing-E-Mails mehr von diesem Absender, aus keiner Liste.",
  request_title: "Keine Abmeldeanfrage",
  request_heading: "Diese Adresse nimmt nur die Ein-Klick-Abmeldung an",
  request_text: "Ihr E-Mail-Programm hat etwas anderes gesendet, daher wurde nichts geändert, und erneutes Senden hilft nicht. Verwenden Sie die Abmeldeschaltfläche Ihres E-Mail-Programms oder öffnen Sie den Abmeldelink der E-Mail in Ihrem Browser.",
  busy_title: "Zu viele Anfragen",
  busy_heading: "Zu viele Anfragen",
  busy_text: "Es wurde nichts geändert. Bitte versuchen Sie es in einigen Minuten noch einmal.",
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
  done_already_text: "C’était déjà fait : vous étiez déjà désabonné.",
  done_text: "Vous ne recevrez plus d’e-mails marketing de {sender}, d’aucune de ses listes.",
  done_text_anonymous: "Vous ne recevrez plus d’e-mails marketing de cet expéditeur, d’aucune de ses listes.",
  request_title: "Pas une demande de désabonnement",
  request_heading: "Cette adresse n’accepte que la demande de désabonnement en un clic",
  request_text: "Votre logiciel de messagerie a envoyé autre chose : rien n’a été changé, et le renvoyer n’y changera rien. Utilisez le bouton de désabonnement de votre messagerie, ou ouvrez le lien de désabonnement de l’e-mail dans votre navigateur.",
  busy_title: "Trop de demandes",
  busy_heading: "Trop de demandes",
  busy_text: "Rien n’a été changé. Veuillez réessayer dans quelques minutes.",
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
  done_already_text: "Era già stato fatto: la tua iscrizione era già annullata.",
  done_text: "Non riceverai più e-mail di marketing da {sender}, da nessuna delle sue liste.",
  done_text_anonymous: "Non riceverai più e-mail di marketing da questo mittente, da nessuna delle sue liste.",
  request_title: "Non è una richiesta di disiscrizione",
  request_heading: "Questo indirizzo accetta solo la richiesta di disiscrizione con un clic",
  request_text: "Il tuo programma di posta ha inviato qualcos’altro: non è stato cambiato nulla, e inviarlo di nuovo non servirà. Usa il pulsante di disiscrizione del tuo programma di posta, oppure apri nel browser il link di disiscrizione dell’e-mail.",
  busy_title: "Troppe richieste",
  busy_heading: "Troppe richieste",
  busy_text: "Non è stato cambiato nulla. Riprova tra qualche minuto.",
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
