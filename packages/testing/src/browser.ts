// Browser tests: headless Chromium (Debian's `chromium` package) driven by
// playwright-core, which downloads no browser of its own; axe-core for the
// accessibility check; a cross-site iframe for pages that are embedded.
//
// A phone and the keyboard are plain Playwright, no wrapper needed:
//
//   const context = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
//   const page = await context.newPage();
//   await page.goto(url);
//   await expectFitsViewport(page);                 // nothing wider than 360 px: no horizontal scrolling
//   await tabUntilFocused(page, page.getByRole("button", { name: "Save" }));   // Tab only, as a keyboard user
//   await page.keyboard.press("Enter");             // (or "Space" for a button, both for a checkbox)
//
// (`isMobile` makes Chromium honour `<meta name="viewport">` and lay the page
// out as a phone does; without it the 360 px viewport is a narrow desktop window.)

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AxeResults, ImpactValue, Result, RunOptions, SerialContextObject } from "axe-core";
import type * as Playwright from "playwright-core";
import type { Browser, BrowserContext, Frame, LaunchOptions, Locator, Page } from "playwright-core";
import { installedProgram } from "./programs.js";

/**
 * playwright-core, loaded on first use: this module is part of the kit's
 * index, which every suite imports, and loading Playwright costs ≈ 0.2 s and
 * 50 MB that suites without a browser need not pay.
 */
function playwright(): typeof Playwright {
  return require("playwright-core") as typeof Playwright;
}

// The page's globals, as far as the functions this module runs in the page
// use them. The kit compiles without TypeScript's DOM library, which would
// retype Node's globals (fetch takes no Buffer body under it).
declare const document: PageDocument;
interface PageElement {
  tagName: string;
  id: string;
  textContent: string | null;
  ownerDocument: PageDocument;
  getBoundingClientRect(): { left: number; right: number };
}
interface PageDocument {
  documentElement: { clientWidth: number; scrollWidth: number };
  body: { querySelectorAll(selector: string): ArrayLike<PageElement> };
  activeElement: PageElement | null;
  hasFocus(): boolean;
}

/** Debian's (and Ubuntu's) Chromium; `CHROMIUM_PATH` names another. */
export const DEFAULT_CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * The flags every launch gets: headless without a sandbox (these machines and
 * CI run as root, where Chromium's sandbox refuses to start), no GPU, and no
 * requests of the browser's own (updates, safe browsing, field trials): a test
 * reaches only the servers it started.
 */
export const CHROMIUM_ARGS: readonly string[] = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"];

/**
 * The Chromium the tests run: `CHROMIUM_PATH`, else /usr/bin/chromium. Throws,
 * saying how to install it, when it is not there. The one place that knows;
 * scripts/chromium/install.sh (run by .ci/run) installs it the same way.
 */
export function chromiumPath(): string {
  return installedProgram({ what: "Chromium", variable: "CHROMIUM_PATH", defaultPath: DEFAULT_CHROMIUM_PATH, debianPackage: "chromium", neededBy: "the browser tests" });
}

/** Options of `launchChromium`: Playwright's, less the executable (always `chromiumPath()`); `args` are added to CHROMIUM_ARGS. */
export type ChromiumLaunchOptions = Omit<LaunchOptions, "executablePath" | "channel">;

/**
 * A headless Chromium (`chromiumPath()`, CHROMIUM_ARGS). Each
 * `browser.newContext()` is a fresh profile without cookies or storage (an
 * incognito-like profile: Chromium blocks third-party cookies there). Close
 * it in `afterAll`.
 */
export async function launchChromium(options: ChromiumLaunchOptions = {}): Promise<Browser> {
  return playwright().chromium.launch({ ...options, executablePath: chromiumPath(), args: [...CHROMIUM_ARGS, ...(options.args ?? [])] });
}

/** Options of `launchChromiumProfile`: Playwright's context options (viewport, …) and the cookie setting. */
export type ChromiumProfileOptions = Omit<NonNullable<Parameters<Playwright.BrowserType["launchPersistentContext"]>[1]>, "executablePath" | "channel"> & {
  /**
   * "blocked": cookies of a frame from another site than the top page are
   * neither stored nor sent (Partitioned cookies, CHIPS, still are), as in a
   * browser whose user blocked third-party cookies. "allowed": they are, as
   * in a browser that still allows them.
   */
  thirdPartyCookies: "blocked" | "allowed";
};

const PROFILE_LAUNCH_TIMEOUT_MS = 30_000;
const PROFILE_STEP_TIMEOUT_MS = 15_000;

/**
 * A Chromium on a fresh profile of its own (a temporary directory, removed
 * by the returned context's `close()`) with third-party cookies explicitly
 * blocked or allowed. Close the context in `afterAll`; it is the whole
 * browser (`context.browser()` is null for such a profile).
 *
 * How: the profile's preference `profile.cookie_controls_mode` (1 blocks
 * third-party cookies, 0 allows them), written before the start. Measured on
 * Chromium 156 (Debian 12): the `--test-third-party-cookie-phaseout` switch
 * and the DevTools command `Network.setCookieControls` change nothing there,
 * and a profile without the preference, like `launchChromium`'s contexts,
 * already blocks them; the preference makes the test's premise explicit and
 * lets a control test allow them (packages/testing/test/browser.test.ts).
 */
export async function launchChromiumProfile(options: ChromiumProfileOptions): Promise<BrowserContext> {
  const { thirdPartyCookies, ...contextOptions } = options;
  const userDataDir = mkdtempSync(join(tmpdir(), "emailsvc-chromium-"));
  try {
    mkdirSync(join(userDataDir, "Default"));
    const mode = thirdPartyCookies === "blocked" ? 1 : 0;
    writeFileSync(join(userDataDir, "Default", "Preferences"), JSON.stringify({ profile: { cookie_controls_mode: mode } }));
    const context = await playwright().chromium.launchPersistentContext(userDataDir, {
      // A start that hangs fails on its own, naming the launch, well inside a test's time.
      timeout: PROFILE_LAUNCH_TIMEOUT_MS,
      ...contextOptions,
      executablePath: chromiumPath(),
      args: [...CHROMIUM_ARGS, ...(contextOptions.args ?? [])],
    });
    // Likewise each action and navigation: a step that hangs (CI saw one such
    // test run into Jest's 60 s once, without saying which step) fails with
    // Playwright's own error naming the step and what it waited for.
    context.setDefaultTimeout(PROFILE_STEP_TIMEOUT_MS);
    // The "close" event comes while Chromium may still write its profile, so
    // the directory goes once close() has waited for the browser to exit (or,
    // when the browser went away by itself, after the event, with retries).
    const removeProfile = () => rm(userDataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    const close = context.close.bind(context);
    context.close = async (closeOptions) => {
      await close(closeOptions);
      await removeProfile();
    };
    context.once("close", () => void removeProfile().catch(() => undefined));
    return context;
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
}

// ---------------------------------------------------------------------------
// Accessibility (axe-core)

/** WCAG 2.0 and 2.1, levels A and AA: what the pages must pass. */
export const WCAG_TAGS: readonly string[] = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

export interface AxeCheckOptions {
  /** What to check (CSS selectors, or axe's include/exclude object); default the whole document. */
  context?: string | SerialContextObject;
  /** Tags of the rules to run; default WCAG_TAGS. */
  tags?: readonly string[];
  /** Rule ids to leave out (say why beside the call). */
  disableRules?: readonly string[];
}

/** One violated rule, as `expectNoAxeViolations` reports it. */
export interface AxeViolation {
  id: string;
  impact: ImpactValue | undefined;
  help: string;
  helpUrl: string;
  /** Each offending element: axe's selector path (frames first), and what it says to fix. */
  nodes: Array<{ target: string; summary: string }>;
}

let axeSource: string | undefined;

/**
 * Runs axe-core in `page` (or one frame) and returns the violations. axe's
 * source is evaluated through the DevTools protocol rather than added as a
 * `<script>` element: a page with a strict Content-Security-Policy
 * (`script-src` or `default-src 'none'`, as the unsubscribe page has) refuses
 * inline scripts, but not the debugger. The page is left with `window.axe`.
 */
export async function axeViolations(page: Page | Frame, options: AxeCheckOptions = {}): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  await page.evaluate(axeSource);
  const runOptions: RunOptions = {
    runOnly: { type: "tag", values: [...(options.tags ?? WCAG_TAGS)] },
    resultTypes: ["violations"],
    rules: Object.fromEntries((options.disableRules ?? []).map((id) => [id, { enabled: false }])),
  };
  const results = await page.evaluate(
    ([context, opts]) => {
      const axe = (globalThis as unknown as { axe: { run(context: unknown, options: unknown): Promise<AxeResults> } }).axe;
      return axe.run(context ?? document, opts);
    },
    [options.context ?? null, runOptions] as const,
  );
  return results.violations.map((v: Result) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    helpUrl: v.helpUrl,
    nodes: v.nodes.map((n) => ({ target: n.target.map(String).join(" >>> "), summary: n.failureSummary ?? "" })),
  }));
}

/** One line per violation and one per element: `- color-contrast (serious): Elements must meet …` / `    main > button: Fix any of …`. */
export function formatAxeViolations(violations: readonly AxeViolation[]): string {
  return violations
    .map((v) => {
      const nodes = v.nodes.map((n) => `    ${n.target}: ${n.summary.replace(/\s*\n\s*/g, " ")}`);
      return [`- ${v.id} (${v.impact ?? "no impact given"}): ${v.help} <${v.helpUrl}>`, ...nodes].join("\n");
    })
    .join("\n");
}

/** Fails, listing each violation (rule, impact, elements), when axe finds any in `page` (WCAG 2.1 A and AA by default). */
export async function expectNoAxeViolations(page: Page | Frame, options: AxeCheckOptions = {}): Promise<void> {
  const violations = await axeViolations(page, options);
  if (violations.length > 0) {
    throw new Error(`axe-core found ${violations.length} accessibility violation(s) in ${where(page)}:\n${formatAxeViolations(violations)}`);
  }
}

// ---------------------------------------------------------------------------
// Phone and keyboard

/**
 * Fails when the document is wider than the viewport (a phone user would
 * have to scroll sideways), naming the elements that stick out. Use with a
 * narrow viewport, e.g. `{ width: 360, height: 740 }` and `isMobile: true`.
 */
export async function expectFitsViewport(page: Page): Promise<void> {
  const found = await page.evaluate(() => {
    const root = document.documentElement;
    const width = root.clientWidth;
    const wider: string[] = [];
    for (const el of Array.from(document.body.querySelectorAll("*"))) {
      const box = el.getBoundingClientRect();
      if (box.right > width + 0.5 || box.left < -0.5) {
        wider.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""} (${Math.round(box.left)}..${Math.round(box.right)} px)`);
      }
    }
    return { width, scrollWidth: root.scrollWidth, wider: wider.slice(0, 10) };
  });
  if (found.scrollWidth > found.width) {
    throw new Error(
      `${where(page)} is ${found.scrollWidth} px wide in a ${found.width} px viewport (horizontal scrolling); wider: ${found.wider.join(", ") || "(no element found)"}`,
    );
  }
}

/**
 * Presses Tab (nothing else) until `target` has the focus, as a keyboard user
 * moves through the page; returns how many presses it took. Fails after
 * `maxPresses`, naming where the focus went instead.
 */
export async function tabUntilFocused(page: Page, target: Locator, maxPresses = 20): Promise<number> {
  const visited: string[] = [];
  for (let presses = 1; presses <= maxPresses; presses++) {
    await page.keyboard.press("Tab");
    if (await target.evaluate((el: PageElement) => el === el.ownerDocument.activeElement && el.ownerDocument.hasFocus())) return presses;
    visited.push(
      await page.evaluate(() => {
        const el = document.activeElement;
        return el ? `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""} "${(el.textContent ?? "").trim().slice(0, 30)}"` : "nothing";
      }),
    );
  }
  throw new Error(`${maxPresses} presses of Tab never reached ${String(target)}; the focus went to: ${visited.join(", ")}`);
}

// ---------------------------------------------------------------------------
// Cross-site iframe

/** A page of another site embedding `url` in an iframe. */
export interface CrossSiteFrame {
  /** The embedded page's frame: click, type and check inside it (or run `expectNoAxeViolations` on it). */
  frame: Frame;
  /** The embedding page's address. */
  parentUrl: string;
  /** Stops the embedding page's server. */
  close(): Promise<void>;
}

/**
 * Serves a tiny page from another site than `url` (`localhost` when `url`
 * is on 127.0.0.1, else 127.0.0.1: different hosts are different sites for
 * cookies, so the frame is third-party) with `url` in an iframe, opens it in
 * `page` and resolves with the frame once it has loaded. Fails, saying so,
 * when `url` refuses to be framed (CSP `frame-ancestors` or
 * X-Frame-Options: Chromium shows an error page in the frame instead).
 * Combine with `launchChromiumProfile({ thirdPartyCookies: "blocked" })`.
 */
export async function openInCrossSiteFrame(page: Page, url: string, options: { title?: string } = {}): Promise<CrossSiteFrame> {
  const target = new URL(url);
  const parentHost = target.hostname === "127.0.0.1" ? "localhost" : "127.0.0.1";
  const title = options.title ?? "Embedded page";
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>Embedding site</title></head><body><main><h1>Embedding site</h1>` +
    `<iframe src="${escapeAttribute(url)}" title="${escapeAttribute(title)}" style="width:100%;height:24rem;border:1px solid #666"></iframe>` +
    `</main></body></html>`;
  const server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "/") !== "/") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(html);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const close = () => closeServer(server);
  try {
    const parentUrl = `http://${parentHost}:${(server.address() as AddressInfo).port}/`;
    await page.goto(parentUrl, { waitUntil: "load" });
    const handle = await page.waitForSelector("iframe");
    const frame = await handle.contentFrame();
    if (!frame) throw new Error(`the iframe of ${parentUrl} has no frame`);
    await frame.waitForLoadState("load");
    if (!frame.url().startsWith(target.origin)) {
      throw new Error(
        `${url} refused to be framed by ${parentUrl} (the frame shows ${frame.url()}): ` +
          "its Content-Security-Policy frame-ancestors or X-Frame-Options forbids it",
      );
    }
    return { frame, parentUrl, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The page's address without query and fragment: links carry tokens, which have no place in a test's output. */
function where(page: Page | Frame): string {
  const url = page.url();
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}${parsed.search ? "?…" : ""}`;
  } catch {
    return url;
  }
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
