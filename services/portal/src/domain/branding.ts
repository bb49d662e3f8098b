// An account's branding of its portal pages: a logo and the colour of
// buttons and links. Both are shown to every subscriber, so they are checked
// here: the logo is an https image (the pages' CSP then allows images from
// that one origin, nothing else), and the colour must keep the pages readable
// (white button text on it, and links in it on the white page).

/** Longest logo URL taken. */
export const LOGO_URL_MAX = 2048;

/** WCAG 2.1 AA contrast for normal text. */
export const MIN_CONTRAST = 4.5;

const HEX_COLOR = /^#[0-9a-f]{6}$/i;

/** The logo URL as stored (the URL parser's form), or why it is refused. */
export function checkLogoUrl(raw: string): { url: string } | { problem: string } {
  if (raw.length > LOGO_URL_MAX) return { problem: `at most ${LOGO_URL_MAX} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: "is not a URL (https://…)" };
  }
  if (url.protocol !== "https:") return { problem: "must be an https:// URL (the pages load nothing over plain http)" };
  if (url.username || url.password) return { problem: "must not carry a user name or password" };
  if (url.href.length > LOGO_URL_MAX) return { problem: `at most ${LOGO_URL_MAX} characters` };
  return { url: url.href };
}

/** The origin the pages' CSP allows images from, for a stored logo URL. */
export function logoOrigin(logoUrl: string): string {
  return new URL(logoUrl).origin;
}

/** The WCAG 2.1 relative luminance of a "#rrggbb" colour. */
function luminance(hex: string): number {
  const channel = (offset: number) => {
    const value = parseInt(hex.slice(offset, offset + 2), 16) / 255;
    return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** The WCAG contrast ratio of two "#rrggbb" colours (1 to 21). */
export function contrastRatio(a: string, b: string): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

/** The colour as stored (lower case), or why it is refused. */
export function checkBrandColor(raw: string): { color: string } | { problem: string } {
  if (!HEX_COLOR.test(raw)) return { problem: "must be a colour as #rrggbb, e.g. #0a58ca" };
  const color = raw.toLowerCase();
  const ratio = contrastRatio(color, "#ffffff");
  if (ratio < MIN_CONTRAST) {
    return { problem: `has a contrast of ${ratio.toFixed(2)}:1 with white; at least ${MIN_CONTRAST}:1 is needed so that buttons and links stay readable (choose a darker colour)` };
  }
  return { color };
}
