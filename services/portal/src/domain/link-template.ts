// The template a fresh preference link is mailed with when the account has
// none of its own under PORTAL_LINK_TEMPLATE: the portal creates this one in
// the account (a transactional template, listed with the others) the first
// time it is needed, so that "send me a new link" works from the start. The
// account may change it like any other template; delivery fills
// {{preference_center_url}} for the recipient subscriber.
export const DEFAULT_LINK_TEMPLATE = {
  name: "Preference link (created by the portal)",
  subject: "Your link to manage your email",
  mjml: `<mjml><mj-body><mj-section><mj-column>
<mj-text font-size="18px" font-weight="bold">Manage your email</mj-text>
<mj-text>You asked for a new link to your email preferences. It works for a few days.</mj-text>
<mj-button href="{{preference_center_url}}" background-color="#0a58ca">Open my preferences</mj-button>
<mj-text font-size="13px" color="#57606a">If you did not ask for it, ignore this email: nothing changes.</mj-text>
</mj-column></mj-section></mj-body></mjml>`,
} as const;
