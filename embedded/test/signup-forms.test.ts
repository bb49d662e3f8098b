import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { encodeSolution, solveChallenge, type Challenge } from "../../services/portal/src/domain/proof-of-work";
import { eventually, startTestPlatform, storedDocs, type TestPlatform } from "./support/platform-client";

// Public signup forms over plain HTTP, on both stores: the forms through the
// REST API (checked against the served OpenAPI document), and posts to the
// portal's page server as a browser or a bot sends them. Whatever a bot does
// wrong (no proof of work, a bad or replayed one, the honeypot filled,
// another origin, too many posts) is refused or silently dropped, and
// nothing is stored; an accepted post reaches SignUp, whose answer is the
// same for a new and a known address. embedded/test/signup-form-browser.test.ts
// posts the snippet from another origin in Chromium.

const SITE = "https://shop.example.com";

describe.each(["embedded", "mongodb"] as const)("signup forms (%s)", (store) => {
  let t: TestPlatform;
  let formId: string;
  let action: string;
  beforeAll(async () => {
    t = await startTestPlatform(
      `signup-forms-${store}`,
      {
        ...GENEROUS_RATE_LIMIT_ENV,
        // Each scenario posts from an address of its own (X-Forwarded-For from the one proxy trusted).
        TRUSTED_PROXY_HOPS: "1",
        SIGNUP_RATE_IP: "6/1h",
        SIGNUP_RATE_ADDRESS: "2/1h",
        // Well above what the scenarios post to the main form; the last scenario fills a form of its own.
        SIGNUP_RATE_FORM: "20/1h",
        SIGNUP_POW_MAX_NUMBER: "1000",
        // On MongoDB the budgets are the replicas' shared counters (the portal's `rate_limits`).
        // A slow answer from the store (FerretDB on a busy machine) would count a request locally, by design, and let one more through: waited for here.
        ...(store === "mongodb" ? { RATE_LIMIT_STORE: "mongo", RATE_LIMIT_STORE_TIMEOUT_MS: "5000" } : {}),
      },
      { mongo: store === "mongodb" },
    );
    await t.call("POST", "/api/v1/tags", { body: { name: "news", is_public: true } });
    await t.call("POST", "/api/v1/tags", { body: { name: "offers", is_public: true } });
    await t.call("POST", "/api/v1/tags", { body: { name: "vip", is_public: false } });
    const created = await t.call("POST", "/api/v1/forms", {
      body: {
        name: "Footer form",
        tags: ["news"],
        optional_tags: ["offers"],
        fields: [{ name: "first_name", label: "First name", type: "text", required: true }],
        success_url: `${SITE}/thanks`,
        error_url: `${SITE}/oops`,
        allowed_origins: [SITE],
        consent_text: "Yes, send me the newsletter. I can unsubscribe at any time.",
        consent_version: "2026-11",
      },
    });
    expect(created.status).toBe(201);
    formId = created.body.id;
    // The page this platform serves (PREFERENCES_URL is localhost:PORTAL_PORT here).
    action = (created.body.action_url as string).replace("localhost", "127.0.0.1");
  });
  afterAll(async () => {
    await t?.close();
  });

  let ipCounter = 0;
  /** A client address of the scenario's own. */
  const newIp = () => `203.0.113.${++ipCounter}`;

  async function post(fields: Record<string, string>, headers: Record<string, string> = {}, url = action): Promise<Response> {
    return fetch(url, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: SITE, "x-forwarded-for": newIp(), ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  }

  async function solution(ip = newIp(), url = action): Promise<string> {
    const res = await fetch(`${url}/challenge`, { headers: { origin: SITE, "x-forwarded-for": ip } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(SITE);
    const challenge = (await res.json()) as Challenge;
    return encodeSolution(challenge, solveChallenge(challenge)!);
  }

  const subscribersNamed = async (email: string) => (await t.call("GET", `/api/v1/subscribers?limit=500`)).body.items.filter((s: { email: string }) => s.email === email);

  describe("the forms through the REST API", () => {
    it("a form carries its post address and a snippet that works without JavaScript", async () => {
      const res = await t.call("GET", `/api/v1/forms/${formId}`);
      expect(res.status).toBe(200);
      expect(formId).toMatch(/^frm_[0-9a-z]{26}$/);
      const snippet = res.body.snippet as string;
      expect(snippet).toContain(`<form method="post" action="${res.body.action_url}"`);
      expect(snippet).toMatch(/<label for="[^"]+-email">Email address<\/label><br><input id="[^"]+-email" name="email" type="email"/);
      expect(snippet).toContain('name="first_name"');
      expect(snippet).toContain('value="offers"');
      // The honeypot: off screen, out of the tab order, hidden from screen readers, labelled.
      expect(snippet).toMatch(/<div aria-hidden="true" style="position:absolute;left:-10000px[^"]*"><label for="[^"]+-website">Leave this field empty<\/label><input [^>]*name="website" type="text" tabindex="-1"/);
      expect(snippet).toContain("Yes, send me the newsletter. I can unsubscribe at any time.");
      expect(snippet).not.toMatch(/<script(?![^>]*signup\.js)/);
      const list = await t.call("GET", "/api/v1/forms");
      expect(list.body.items.map((f: { id: string }) => f.id)).toEqual([formId]);
    });

    it("refuses settings a form may not have, naming each field, and stores nothing", async () => {
      const res = await t.call("POST", "/api/v1/forms", {
        body: { name: "Bad", tags: ["vip"], allowed_origins: ["http://shop.example.com", "https://shop.example.com/page"], success_url: "http://evil.example/x" },
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("validation_failed");
      expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["allowed_origins[0]", "allowed_origins[1]", "consent_text", "success_url", "tags"]);
      expect((await t.call("POST", "/api/v1/forms", { body: { name: "No origins", allowed_origins: [], consent_version: "v1" } })).status).toBe(400);
      expect((await t.call("GET", "/api/v1/forms")).body.items).toHaveLength(1);
    });

    it("changes the fields given, and deletes (then posts to it are 404)", async () => {
      const made = await t.call("POST", "/api/v1/forms", { body: { name: "Temp", allowed_origins: [SITE], consent_version: "v1" } });
      const changed = await t.call("PATCH", `/api/v1/forms/${made.body.id}`, { body: { name: "Renamed", optional_tags: ["offers"] } });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({ name: "Renamed", optional_tags: ["offers"], allowed_origins: [SITE], consent_version: "v1" });
      expect((await t.call("PATCH", `/api/v1/forms/${made.body.id}`, { body: { optional_tags: ["vip"] } })).status).toBe(400);
      expect((await t.call("DELETE", `/api/v1/forms/${made.body.id}`)).status).toBe(204);
      const gone = await t.call("GET", `/api/v1/forms/${made.body.id}`);
      expect(gone.status).toBe(404);
      expect(gone.body.code).toBe("form_not_found");
      const tempAction = action.replace(formId, made.body.id);
      const res = await post({ email: "late@example.com", pow: await solution() }, { accept: "application/json" }, tempAction);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: "form_not_found" });
    });

    it("keeps modes and accounts apart", async () => {
      const live = await t.call("POST", `/admin/v1/accounts/${t.accountId}/api-keys`, { admin: true, body: { mode: "live" } });
      const liveKey = live.body.key as string;
      expect((await t.call("GET", `/api/v1/forms/${formId}`, { key: liveKey })).status).toBe(404);
      expect((await t.call("GET", "/api/v1/forms", { key: liveKey })).body.items).toEqual([]);
      const other = await t.call("POST", "/admin/v1/accounts", { admin: true, body: { name: "other" } });
      const otherKey = (await t.call("POST", `/admin/v1/accounts/${other.body.id}/api-keys`, { admin: true, body: { mode: "test" } })).body.key as string;
      expect((await t.call("GET", `/api/v1/forms/${formId}`, { key: otherKey })).status).toBe(404);
      expect((await t.call("DELETE", `/api/v1/forms/${formId}`, { key: otherKey })).status).toBe(404);
      expect((await t.call("PATCH", `/api/v1/forms/${formId}`, { key: otherKey, body: { name: "x" } })).status).toBe(404);
      expect((await t.call("GET", `/api/v1/forms/${formId}`)).body.name).toBe("Footer form");
    });
  });

  describe("posts to the form", () => {
    it("an accepted post reaches SignUp: a pending subscriber with the form's tags, the chosen ones and the consent wording", async () => {
      const res = await post(
        { email: "ada@example.com", first_name: "Ada", tags: "offers", website: "", pow: await solution() },
        { "x-forwarded-for": "198.51.100.7", "user-agent": "AdasBrowser/1.0" },
      );
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe(`${SITE}/thanks`);
      const [ada] = await eventually(() => subscribersNamed("ada@example.com"), (found) => found.length === 1);
      expect(ada).toMatchObject({ status: "pending", tags: ["news", "offers"], metadata: { first_name: "Ada" } });
      const exported = await t.call("GET", `/api/v1/subscribers/${ada.id}/export`);
      expect(JSON.stringify(exported.body.consent)).toContain(formId);
      // The consent evidence: how (a form), from where (the client's address, its browser), what was shown.
      const trail = JSON.stringify(exported.body.audit_trail);
      expect(trail).toContain('"form"');
      expect(trail).toContain("198.51.100.7");
      expect(trail).toContain("AdasBrowser/1.0");
      expect(JSON.stringify(exported.body.consent)).toContain("Yes, send me the newsletter.");
    });

    it("answers a known address exactly as a new one, and changes nothing about it", async () => {
      const known = await t.call("POST", "/api/v1/subscribers", { body: { email: "known@example.com", tags: [] } });
      const before = (await t.call("GET", `/api/v1/subscribers/${known.body.id}`)).body;
      const forKnown = await post({ email: "known@example.com", first_name: "K", tags: "offers", pow: await solution() });
      const forNew = await post({ email: "brand-new@example.com", first_name: "N", tags: "offers", pow: await solution() });
      expect([forKnown.status, forKnown.headers.get("location")]).toEqual([forNew.status, forNew.headers.get("location")]);
      expect(await forKnown.text()).toBe(await forNew.text());
      expect((await t.call("GET", `/api/v1/subscribers/${known.body.id}`)).body).toEqual(before);
      await eventually(() => subscribersNamed("brand-new@example.com"), (found) => found.length === 1);
    });

    it("a post without a proof of work gets the portal's check page (no inline script), or a problem when it asks for JSON", async () => {
      const res = await post({ email: "no-pow@example.com", first_name: "N" });
      expect(res.status).toBe(200);
      const csp = res.headers.get("content-security-policy")!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).toContain(`form-action 'self' ${SITE}`);
      const html = await res.text();
      expect(html).toContain('<script src="/subscribe/signup.js"></script>');
      expect(html).not.toMatch(/<script>/);
      expect(html).toContain('name="email" value="no-pow@example.com"');
      expect(html).toContain("data-emailsvc-challenge=");
      const json = await post({ email: "no-pow@example.com", first_name: "N" }, { accept: "application/json" });
      expect(json.status).toBe(400);
      expect(json.headers.get("content-type")).toBe("application/problem+json");
      expect(await json.json()).toMatchObject({ code: "proof_of_work_required" });
      const script = await fetch(action.replace(/\/subscribe\/.*$/, "/subscribe/signup.js"));
      expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
      expect(await subscribersNamed("no-pow@example.com")).toEqual([]);
    });

    it("refuses a bad, a foreign and a replayed proof of work, and stores nothing", async () => {
      const bad = await post({ email: "bot1@example.com", first_name: "B", pow: "bm90IGEgc29sdXRpb24" });
      expect(bad.status).toBe(303);
      expect(bad.headers.get("location")).toBe(`${SITE}/oops?error=proof_of_work_failed`);
      const once = await solution();
      expect((await post({ email: "bot2@example.com", first_name: "B", pow: once })).headers.get("location")).toBe(`${SITE}/thanks`);
      const replay = await post({ email: "bot3@example.com", first_name: "B", pow: once }, { accept: "application/json" });
      expect(replay.status).toBe(403);
      expect(await replay.json()).toMatchObject({ code: "proof_of_work_failed" });
      await eventually(() => subscribersNamed("bot2@example.com"), (found) => found.length === 1);
      expect(await subscribersNamed("bot1@example.com")).toEqual([]);
      expect(await subscribersNamed("bot3@example.com")).toEqual([]);
    });

    it("drops a post whose honeypot is filled, answering it as a success", async () => {
      const res = await post({ email: "honey@example.com", first_name: "H", website: "http://spam.example", pow: await solution() });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe(`${SITE}/thanks`);
      const without = await post({ email: "honey2@example.com", first_name: "H", website: "x" });
      expect(without.headers.get("location")).toBe(`${SITE}/thanks`);
      expect(await subscribersNamed("honey@example.com")).toEqual([]);
      expect(await subscribersNamed("honey2@example.com")).toEqual([]);
    });

    it("refuses a post from another origin, or from none, with 403 and nothing stored", async () => {
      const pow = await solution();
      const foreign = await post({ email: "csrf@example.com", first_name: "C", pow }, { origin: "https://evil.example" });
      expect(foreign.status).toBe(403);
      expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
      expect(await foreign.text()).toContain("may not be used from the page it was sent from");
      const json = await post({ email: "csrf@example.com", first_name: "C", pow }, { origin: "https://evil.example", accept: "application/json" });
      expect(await json.json()).toMatchObject({ code: "origin_not_allowed", status: 403 });
      // No Origin (an old browser): the Referer's origin counts; neither (a script): refused.
      const withoutOrigin = (headers: Record<string, string>) =>
        fetch(action, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": newIp(), ...headers },
          body: new URLSearchParams({ email: "csrf@example.com", first_name: "C", pow }).toString(),
        });
      expect((await withoutOrigin({ referer: "https://evil.example/page" })).status).toBe(403);
      expect((await withoutOrigin({})).status).toBe(403);
      // The same proof of work still works from the form's own site: the refusals did not use it up.
      expect((await post({ email: "csrf@example.com", first_name: "C", pow })).headers.get("location")).toBe(`${SITE}/thanks`);
    });

    it("refuses fields the form does not take, naming them on the error page's URL", async () => {
      const missing = await post({ email: "fields@example.com", first_name: "", pow: await solution() });
      expect(missing.headers.get("location")).toBe(`${SITE}/oops?error=missing_field&field=first_name`);
      const privateTag = await post({ email: "fields@example.com", first_name: "F", tags: "vip", pow: await solution() });
      expect(privateTag.headers.get("location")).toBe(`${SITE}/oops?error=invalid_field&field=tags`);
      const badEmail = await post({ email: "not an address", first_name: "F", pow: await solution() }, { accept: "application/json", origin: SITE });
      expect(badEmail.status).toBe(400);
      expect(await badEmail.json()).toMatchObject({ code: "invalid_email" });
      expect(await subscribersNamed("fields@example.com")).toEqual([]);
    });

    it("answers JSON with CORS for the form's sites", async () => {
      const res = await post({ email: "fetcher@example.com", first_name: "F", pow: await solution() }, { accept: "application/json" });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe(SITE);
      expect(await res.json()).toEqual({ status: "accepted" });
      const preflight = await fetch(action, { method: "OPTIONS", headers: { origin: SITE, "access-control-request-method": "POST" } });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe(SITE);
      const foreign = await fetch(action, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
      expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    });

    it("limits posts per client address, and signups per address", async () => {
      const ip = newIp();
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await post({ email: `ip${i}@example.com` }, { "x-forwarded-for": ip, accept: "application/json" })).status);
      // Six a client may make (SIGNUP_RATE_IP=6/1h); the seventh is refused before the form is even looked up.
      expect(statuses).toEqual([400, 400, 400, 400, 400, 400, 429]);
      const limited = await post({ email: "x@example.com" }, { "x-forwarded-for": ip, accept: "application/json" });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await limited.json()).toMatchObject({ code: "rate_limited" });

      // SIGNUP_RATE_ADDRESS=2/1h, from any client: the address's third signup in the hour is refused.
      const again = async () => (await post({ email: "Repeat@Example.com", first_name: "R", pow: await solution() }, { accept: "application/json" })).status;
      expect([await again(), await again(), await again()]).toEqual([200, 200, 429]);
    });

    it("limits signups per form, whoever posts them", async () => {
      const busy = await t.call("POST", "/api/v1/forms", { body: { name: "Busy", allowed_origins: [SITE], consent_version: "v1" } });
      const busyAction = action.replace(formId, busy.body.id);
      const statuses: number[] = [];
      for (let i = 0; i < 21; i++) {
        const res = await post({ email: `crowd${i}@example.com`, pow: await solution(newIp(), busyAction) }, { accept: "application/json" }, busyAction);
        statuses.push(res.status);
      }
      // SIGNUP_RATE_FORM=20/1h: the 21st is refused, though its client and its address are new.
      expect(statuses).toEqual([...Array<number>(20).fill(200), 429]);
      expect(await subscribersNamed("crowd20@example.com")).toEqual([]);
      if (store === "mongodb") {
        // Counted in the shared store, by hashed keys: no address in them.
        const keys = (await storedDocs(t, "portal", "rate_limits")).map((d) => String(d._id));
        expect(keys).toContain(`signup:form:${busy.body.id}`);
        expect(keys.some((k) => k.startsWith("signup:address:"))).toBe(true);
        expect(keys.filter((k) => k.includes("@"))).toEqual([]);
      }
    });
  });
});
