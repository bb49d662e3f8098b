// What a template version may contain, and what one message may cost. The
// numbers, and the measurements behind them, are in this package's README.

/** Checked when a version is written, and again when one is compiled for rendering. */
export const TEMPLATE_LIMITS = {
  /**
   * Nesting of blocks in the subject or the body: `{{#if}}`, `{{#unless}}`,
   * `{{#each}}`, each `{{else if …}}` chained in one, and `( … )` inside a
   * mustache. Real templates nest 1–4 deep.
   */
  blockDepth: 32,
  /** `{{…}}` expressions (comments excluded) in the subject, or in the body. */
  expressions: 1_000,
  /** Element nesting of the MJML, of the HTML it compiles to, and of a rendered message. */
  markupDepth: 256,
  /** Characters of the compiled HTML of a version. */
  htmlChars: 512 * 1024,
} as const;

/** What rendering one message may produce. */
export const RENDER_LIMITS = {
  /** `{{#each}}` iterations, all blocks together. */
  eachIterations: 10_000,
  /** Evaluations: of a block, one plus the `{{x}}` directly in it, each time it (or an iteration of it) runs. */
  evaluations: 100_000,
  /** Characters of the rendered subject and HTML together. */
  outputChars: 512 * 1024,
  /** Element nesting of the rendered HTML (a `{{#each}}` can repeat an unclosed tag). */
  markupDepth: TEMPLATE_LIMITS.markupDepth,
} as const;

export type TemplateLimit = keyof typeof TEMPLATE_LIMITS;
export type RenderLimit = keyof typeof RENDER_LIMITS;
