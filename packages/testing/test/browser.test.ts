import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext } from "playwright-core";
import {
  axeViolations,
  chromiumPath,
  expectFitsViewport,
  expectNoAxeViolations,
  launchChromium,
  launchChromiumProfile,
  openInCrossSiteFrame,
  tabUntilFocused,
} from "../src/browser";

// The browser kit against small pages served here: each check is shown to
// catch what it is for (a page that breaks the rule) and to pass a page that
// keeps it. The cross-site iframe is checked with a cookie set inside it:
// blocked, it never comes back; allowed (the control), it does.

const page = (title: string, body: string, head = "") =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
  `<title>${title}</title>${head}</head><body><main>${body}</main></body></html>`;

/** What the embedded form's server saw, per request. */
interface Seen {
  method: string;
  cookie: string | undefined;
  body: string;
}

let server: Server;
let origin: string;
const seen: Seen[] = [];

function route(req: IncomingMessage, res: ServerResponse, body: string): void {
  const html = (status: number, text: string, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...headers }).end(text);
  };
  switch (req.url) {
    case "/strict":
      // As strict as the unsubscribe page: no script of the page's own may run.
      return html(200, page("Strict", "<h1>Strict</h1><p>Nothing runs here.</p>"), {
        "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
      });
    case "/broken":
      return html(200, `<!doctype html><html><head><title></title></head><body><img src="/x.png"><button id="nameless"></button></body></html>`);
    case "/low-contrast":
      return html(200, page("Low contrast", `<h1>Low contrast</h1><p id="faint" style="color:#bbb;background:#fff">Hard to read</p>`));
    case "/wide":
      return html(200, page("Wide", `<h1>Wide</h1><div id="table" style="width:600px">A fixed-width table</div>`));
    case "/fluid":
      return html(200, page("Fluid", `<h1>Fluid</h1><p style="max-width:40rem">Wraps to the width it has.</p>`));
    case "/keyboard":
      return html(
        200,
        page("Keyboard", `<h1>Keyboard</h1><a href="#a">First</a> <button id="second">Second</button> <div id="inert">Not focusable</div> <button id="third">Third</button>`),
      );
    case "/no-frames":
      return html(200, page("No frames", "<h1>Not in a frame</h1>"), { "content-security-policy": "frame-ancestors 'none'" });
    case "/form":
      seen.push({ method: req.method ?? "", cookie: req.headers.cookie, body });
      if (req.method === "POST") return html(200, page("Saved", `<h1 id="done">Saved</h1>`));
      // A cookie a third-party frame could only keep where such cookies are allowed.
      return html(200, page("Form", `<h1>Form</h1><form method="post"><input type="hidden" name="choice" value="yes"><button type="submit">Save</button></form>`), {
        "set-cookie": "embedded=1; SameSite=None; Secure; Path=/",
      });
    default:
      return html(404, page("Not found", "<h1>Not found</h1>"));
  }
}

let browser: Browser;
beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => route(req, res, Buffer.concat(chunks).toString()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe("chromiumPath", () => {
  const saved = process.env.CHROMIUM_PATH;
  afterEach(() => {
    if (saved === undefined) delete process.env.CHROMIUM_PATH;
    else process.env.CHROMIUM_PATH = saved;
  });

  it("finds the installed Chromium, and says what to do when CHROMIUM_PATH names none", () => {
    expect(chromiumPath()).toMatch(/chrom/);
    process.env.CHROMIUM_PATH = "/nonexistent/chromium";
    expect(() => chromiumPath()).toThrow(/CHROMIUM_PATH=\/nonexistent\/chromium is not a file/);
  });

  it("launches the Chromium it names", async () => {
    expect(browser.version()).toMatch(/^\d+\./);
  });
});

describe("axe check", () => {
  it("passes a page that keeps WCAG 2.1 AA, even one whose CSP forbids every script", async () => {
    const p = await browser.newPage();
    await p.goto(`${origin}/strict`);
    await expectNoAxeViolations(p);
    await p.close();
  });

  it("lists each violation with its rule, impact and elements", async () => {
    const p = await browser.newPage();
    await p.goto(`${origin}/broken`);
    const ids = (await axeViolations(p)).map((v) => v.id).sort();
    expect(ids).toEqual(expect.arrayContaining(["button-name", "document-title", "html-has-lang", "image-alt"]));
    const error = await expectNoAxeViolations(p).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/accessibility violation\(s\) in http:\/\/127\.0\.0\.1:\d+\/broken/);
    expect((error as Error).message).toContain("- button-name (critical): ");
    expect((error as Error).message).toMatch(/^ {4}#nameless: /m);
    expect((error as Error).message).toMatch(/^ {4}img: /m);
    await p.close();
  });

  it("finds too little contrast, and leaves out the rules it is told to", async () => {
    const p = await browser.newPage();
    await p.goto(`${origin}/low-contrast`);
    const violations = await axeViolations(p);
    expect(violations.map((v) => v.id)).toEqual(["color-contrast"]);
    expect(violations[0]!.nodes.map((n) => n.target)).toEqual(["#faint"]);
    await expectNoAxeViolations(p, { disableRules: ["color-contrast"] });
    await p.close();
  });
});

describe("phone and keyboard", () => {
  let phone: BrowserContext;
  beforeAll(async () => {
    phone = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
  });
  afterAll(() => phone?.close());

  it("fails a page wider than a 360 px phone, naming what sticks out, and passes a fluid one", async () => {
    const p = await phone.newPage();
    await p.goto(`${origin}/wide`);
    await expect(expectFitsViewport(p)).rejects.toThrow(/is 6\d\d px wide in a 360 px viewport .*div#table/);
    await p.goto(`${origin}/fluid`);
    await expectFitsViewport(p);
    await p.close();
  });

  it("tabs to an element with the keyboard only, and fails for one Tab never reaches", async () => {
    const p = await browser.newPage();
    await p.goto(`${origin}/keyboard`);
    expect(await tabUntilFocused(p, p.locator("#third"))).toBe(3);
    await p.goto(`${origin}/keyboard`);
    await expect(tabUntilFocused(p, p.locator("#inert"), 5)).rejects.toThrow(/5 presses of Tab never reached .*the focus went to: a "First", button#second "Second", button#third "Third"/);
    await p.close();
  });
});

describe("cross-site iframe", () => {
  // A Chromium of its own per test: its start and each step are bounded by
  // launchChromiumProfile (30 s, 15 s), so that a hung step fails naming
  // itself before this, the test's own limit, does (CI saw one run into
  // Jest's 60 s once, unnamed).
  const PROFILE_TEST_TIMEOUT_MS = 120_000;
  /** Loads the form in a frame of another site twice, then submits it with the keyboard; returns what the server saw. */
  async function embedAndSubmit(context: BrowserContext): Promise<{ seen: Seen[]; documentCookie: string; parentUrl: string }> {
    seen.length = 0;
    const p = await context.newPage();
    const embedded = await openInCrossSiteFrame(p, `${origin}/form`, { title: "Form" });
    try {
      await embedded.frame.goto(`${origin}/form`); // the second load would carry the cookie the first one set
      const documentCookie = await embedded.frame.evaluate<string>("document.cookie");
      await tabUntilFocused(p, embedded.frame.getByRole("button", { name: "Save" }));
      await p.keyboard.press("Enter");
      await embedded.frame.locator("#done").waitFor();
      return { seen: [...seen], documentCookie, parentUrl: embedded.parentUrl };
    } finally {
      await embedded.close();
      await p.close();
    }
  }

  it("with third-party cookies blocked: the frame's cookie never comes back, and its form posts without one", async () => {
    const context = await launchChromiumProfile({ thirdPartyCookies: "blocked" });
    try {
      const { seen: requests, documentCookie, parentUrl } = await embedAndSubmit(context);
      expect(parentUrl).toMatch(/^http:\/\/localhost:\d+\/$/);
      expect(requests).toEqual([
        { method: "GET", cookie: undefined, body: "" },
        { method: "GET", cookie: undefined, body: "" },
        { method: "POST", cookie: undefined, body: "choice=yes" },
      ]);
      expect(documentCookie).toBe("");
    } finally {
      await context.close();
    }
  }, PROFILE_TEST_TIMEOUT_MS);

  it("with third-party cookies allowed (the control): the same cookie does come back", async () => {
    const context = await launchChromiumProfile({ thirdPartyCookies: "allowed" });
    try {
      const { seen: requests, documentCookie } = await embedAndSubmit(context);
      expect(requests).toEqual([
        { method: "GET", cookie: undefined, body: "" },
        { method: "GET", cookie: "embedded=1", body: "" },
        { method: "POST", cookie: "embedded=1", body: "choice=yes" },
      ]);
      expect(documentCookie).toBe("embedded=1");
    } finally {
      await context.close();
    }
  }, PROFILE_TEST_TIMEOUT_MS);

  it("says so when the page refuses to be framed", async () => {
    const p = await browser.newPage();
    await expect(openInCrossSiteFrame(p, `${origin}/no-frames`)).rejects.toThrow(/refused to be framed .*frame-ancestors or X-Frame-Options/);
    await p.close();
  });
});
