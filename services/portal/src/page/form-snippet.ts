import { LOCALES } from "@emailsvc/text";
import { HONEYPOT_FIELD, MAX_EMAIL_LENGTH, type SignupFormView } from "../domain/signup-form.js";
import { escapeHtml } from "./html.js";

// The HTML an account pastes into its site for a signup form: a plain form
// that posts to the portal, no JavaScript needed (a post without a proof of
// work gets the portal's page that does it). English labels: the account may
// reword them; the field names are what counts.

/** Where a form posts: `{PREFERENCES_URL}/subscribe/{id}`. */
export function formActionUrl(preferencesUrl: string, formId: string): string {
  return `${preferencesUrl.replace(/\/+$/, "")}/subscribe/${formId}`;
}

/** The script that solves the proof of work on the account's own page (optional). */
export function solverScriptUrl(preferencesUrl: string): string {
  return `${preferencesUrl.replace(/\/+$/, "")}/subscribe/signup.js`;
}

export function formSnippet(form: SignupFormView, preferencesUrl: string): string {
  const id = (name: string) => escapeHtml(`${form.id}-${name}`);
  const lines: string[] = [];
  lines.push(`<form method="post" action="${escapeHtml(formActionUrl(preferencesUrl, form.id))}" accept-charset="utf-8" data-emailsvc-signup>`);
  lines.push(`  <p><label for="${id("email")}">Email address</label><br><input id="${id("email")}" name="email" type="email" autocomplete="email" required maxlength="${MAX_EMAIL_LENGTH}"></p>`);
  for (const field of form.fields) {
    const required = field.required ? " required" : "";
    const label = escapeHtml(field.label);
    if (field.type === "boolean") {
      lines.push(`  <p><input id="${id(field.name)}" name="${field.name}" type="checkbox" value="true"${required}> <label for="${id(field.name)}">${label}</label></p>`);
    } else {
      const type = field.type === "number" ? `type="number" step="any"` : `type="text" maxlength="500"`;
      lines.push(`  <p><label for="${id(field.name)}">${label}</label><br><input id="${id(field.name)}" name="${field.name}" ${type}${required}></p>`);
    }
  }
  if (form.askLocale) {
    const options = LOCALES.map((locale) => `<option value="${locale}">${locale}</option>`).join("");
    lines.push(`  <p><label for="${id("locale")}">Language</label><br><select id="${id("locale")}" name="locale"><option value="">-</option>${options}</select></p>`);
  }
  if (form.optionalTags.length > 0) {
    lines.push(`  <fieldset><legend>Lists</legend>`);
    form.optionalTags.forEach((tag, i) => {
      lines.push(`    <p><input id="${id(`tag${i}`)}" name="tags" type="checkbox" value="${escapeHtml(tag)}"> <label for="${id(`tag${i}`)}">${escapeHtml(tag)}</label></p>`);
    });
    lines.push(`  </fieldset>`);
  }
  // The honeypot: off screen and out of the tab order rather than display:none
  // (which some bots skip), hidden from screen readers, and labelled for any
  // that still reach it.
  lines.push(
    `  <div aria-hidden="true" style="position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden"><label for="${id(HONEYPOT_FIELD)}">Leave this field empty</label><input id="${id(HONEYPOT_FIELD)}" name="${HONEYPOT_FIELD}" type="text" tabindex="-1" autocomplete="off" value=""></div>`,
  );
  if (form.consentText !== "") lines.push(`  <p>${escapeHtml(form.consentText)}</p>`);
  lines.push(`  <button type="submit">Subscribe</button>`);
  lines.push(`</form>`);
  lines.push(`<!-- Optional: solve the spam check on this page rather than on a page of ours: -->`);
  lines.push(`<!-- <script src="${escapeHtml(solverScriptUrl(preferencesUrl))}" async></script> -->`);
  return lines.join("\n");
}
