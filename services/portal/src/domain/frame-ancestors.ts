// Who may embed the portal page (CSP `frame-ancestors`). The page is meant for
// iframes on the customer's own site, so any site may embed it unless the
// operator (PORTAL_FRAME_ANCESTORS) or the account (portal settings) narrows it.

const SOURCE = /^(\*|'self'|'none'|https?:\/\/(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?)$/i;
export const MAX_FRAME_ANCESTORS = 32;

/** Why a list of sources is refused, or undefined when it is valid. */
export function frameAncestorsProblem(sources: readonly string[]): string | undefined {
  if (sources.length > MAX_FRAME_ANCESTORS) return `at most ${MAX_FRAME_ANCESTORS} sources`;
  const bad = sources.find((source) => source.length > 253 || !SOURCE.test(source));
  if (bad !== undefined) return `"${bad.slice(0, 100)}" is not *, 'self', 'none' or an origin such as https://shop.example.com`;
  // 'none' beside other sources is ignored by browsers (CSP): allowed, as the document says.
  return undefined;
}

/** The CSP directive's value. */
export function frameAncestorsDirective(sources: readonly string[]): string {
  return sources.join(" ");
}
