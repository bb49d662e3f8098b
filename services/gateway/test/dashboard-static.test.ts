import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DASHBOARD_CSP, dashboardDistDir } from "../src/dashboard/static";
import { startHarness, type Harness } from "./support/harness";

// The gateway serves the built dashboard at /dashboard/: every page path
// answers index.html (the app routes inside), assets by their hashed names
// with a year's cache, missing assets 404, and every answer carries the
// headers that keep the dashboard from being framed or loading foreign code.

function fakeBuild(): string {
  const dir = mkdtempSync(join(tmpdir(), "dashboard-dist-"));
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), '<!doctype html><html><head><script type="module" src="/dashboard/assets/app-ABC.js"></script></head><body></body></html>');
  writeFileSync(join(dir, "favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
  writeFileSync(join(dir, "assets", "app-ABC.js"), "console.log('dashboard');".repeat(50));
  writeFileSync(join(dir, "build.json"), JSON.stringify({ version: "x", files: ["assets/app-ABC.js"] }));
  // The compressed forms dashboard/build.mjs writes beside each file.
  for (const name of ["index.html", "favicon.svg", "assets/app-ABC.js"]) {
    const body = readFileSync(join(dir, name));
    writeFileSync(join(dir, `${name}.br`), brotliCompressSync(body));
    writeFileSync(join(dir, `${name}.gz`), gzipSync(body));
  }
  return dir;
}

describe("the dashboard's static files", () => {
  let h: Harness;
  let dir: string;
  beforeAll(async () => {
    dir = fakeBuild();
    h = await startHarness({ dashboardDir: dir });
  });
  afterAll(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${h.url}${path}`, { headers, redirect: "manual" });

  it("answers index.html for every page path, never cached, with the security headers", async () => {
    for (const path of ["/dashboard/", "/dashboard/subscribers", "/dashboard/subscribers/sub_1?tag=x", "/dashboard/accept"]) {
      const res = await get(path, { "accept-encoding": "identity" });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-cache");
      expect(res.headers.get("content-security-policy")).toBe(DASHBOARD_CSP);
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(await res.text()).toContain("/dashboard/assets/app-ABC.js");
    }
  });

  it("has a CSP without inline or eval'd scripts that refuses framing", () => {
    const directives = Object.fromEntries(DASHBOARD_CSP.split("; ").map((d) => [d.split(" ")[0], d.split(" ").slice(1)]));
    expect(directives["script-src"]).toEqual(["'self'"]);
    expect(directives["default-src"]).toEqual(["'none'"]);
    expect(directives["frame-ancestors"]).toEqual(["'none'"]);
    expect(directives["connect-src"]).toEqual(["'self'"]);
  });

  it("serves hashed assets for a year, compressed as the browser accepts, with a working ETag", async () => {
    const br = await get("/dashboard/assets/app-ABC.js", { "accept-encoding": "gzip, deflate, br" });
    expect(br.status).toBe(200);
    expect(br.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(br.headers.get("content-encoding")).toBe("br");
    // fetch decodes the body by its Content-Encoding: the text proves the encoding right.
    expect(await br.text()).toContain("console.log('dashboard')");
    const gz = await get("/dashboard/assets/app-ABC.js", { "accept-encoding": "gzip" });
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    expect(await gz.text()).toContain("console.log('dashboard')");
    const again = await get("/dashboard/assets/app-ABC.js", { "if-none-match": br.headers.get("etag")! });
    expect(again.status).toBe(304);
  });

  it("answers 404 problem+json for an asset that is not there (an old tab after a deploy)", async () => {
    const res = await get("/dashboard/assets/app-OLD.js");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
  });

  it("redirects / and /dashboard to /dashboard/", async () => {
    for (const path of ["/", "/dashboard"]) {
      const res = await get(path);
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toBe("/dashboard/");
    }
  });

  it("leaves the API alone", async () => {
    const res = await get("/api/v1/tags");
    expect(res.status).toBe(401);
  });
});

it("finds the dashboard built by `npm run build`", () => {
  const dir = dashboardDistDir();
  expect(dir).toBeDefined();
});
