import { compile as compileHtmlToText } from "html-to-text";

// The plain-text part of a message, derived from its rendered HTML.

// Compiled once per process and reused (≈ 0.3 ms per message against 0.7 ms
// when built per call; TOOLCHAIN.md).
const toText = compileHtmlToText({
  wordwrap: 78,
  selectors: [
    // MJML's hidden preview text (mj-preview) is not part of the message body.
    { selector: "div[style*='display:none']", format: "skip" },
    { selector: "img", format: "skip" },
    { selector: "a", options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
  ],
});

const BODY_START = /<body[\s>]/i;

/**
 * Derives the plain-text part of an HTML email. html-to-text walks the
 * document recursively: give it HTML whose element nesting was checked
 * (scanMarkup), as the renderer does.
 */
export function htmlToText(html: string): string {
  // Only the body becomes text; handing over the body alone spares parsing
  // the head (MJML's styles and Outlook conditionals), ≈ 30 % of the cost.
  const body = html.search(BODY_START);
  return toText(body > 0 ? html.slice(body) : html).trim();
}
