// The one table of error codes (src/http/error-codes.ts): every code the
// gateway answers, its own and the services' that pass through it, is in it
// with the status it is answered with; the OpenAPI document lists each
// status's codes from it. The gateway's throw sites are typed by the table
// (the compiler refuses another code); the services' AppError codes are read
// from their sources here.

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { AppError, toConnectError, type ErrorKind } from "@emailsvc/errors";
import { ERROR_CODES, codesWithStatus, isErrorCode } from "../src/http/error-codes";
import { problemBody, problemFromConnect, Problem } from "../src/http/problem";
import { buildOpenApiDocument } from "../src/openapi";

const ROOT = join(__dirname, "..", "..", "..");

/** Every .ts source under `dir` (no tests, builds or generated code). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules" || name === "dist" || name === "test" || name === "gen") continue;
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts") && !name.endsWith("_pb.ts")) out.push(path);
  }
  return out;
}

const SOURCES = [...readdirSync(join(ROOT, "services")).map((s) => join(ROOT, "services", s, "src")), ...readdirSync(join(ROOT, "packages")).map((p) => join(ROOT, "packages", p, "src"))]
  .filter((dir) => {
    try {
      return statSync(dir).isDirectory();
    } catch {
      return false;
    }
  })
  .flatMap(sources);

/**
 * Codes built at run time: the template literal of each site, and what it
 * makes. A new dynamic site fails the test until it is listed here.
 */
const DYNAMIC: Record<string, string[]> = {
  "`${service}_unavailable`": ["subscribers_unavailable", "templates_unavailable"],
};

interface Site {
  where: string;
  kind: ErrorKind;
  code: string;
}

/** `new AppError(kind, code, …)` of every source: the kind and each code its second argument can be. */
function appErrorSites(): { sites: Site[]; unparsed: string[] } {
  const sites: Site[] = [];
  const unparsed: string[] = [];
  for (const file of SOURCES) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/new AppError\(\s*"([a-z_]+)",\s*/g)) {
      const where = `${relative(ROOT, file)}:${text.slice(0, match.index).split("\n").length}`;
      const kind = match[1] as ErrorKind;
      // The second argument: up to the comma that ends it (no nesting in these sites).
      const rest = text.slice(match.index! + match[0].length);
      const arg = rest.slice(0, rest.search(/,\s*(?:["`]|[a-zA-Z(])/)).trim();
      if (/^"[a-z_]+"$/.test(arg)) sites.push({ where, kind, code: arg.slice(1, -1) });
      else if (/^[a-zA-Z.]+$/.test(arg)) continue; // another service's code passed on (readError), listed where it is raised
      else if (/^[^"`]*\?\s*"[a-z_]+"\s*:\s*"[a-z_]+"$/.test(arg)) for (const code of arg.match(/"([a-z_]+)"/g)!) sites.push({ where, kind, code: code.slice(1, -1) });
      else if (DYNAMIC[arg]) for (const code of DYNAMIC[arg]) sites.push({ where, kind, code });
      else unparsed.push(`${where}: ${arg}`);
    }
    // The runtime's shorthands.
    for (const match of text.matchAll(/\b(invalid|notFound)\(/g)) {
      if (text.slice(Math.max(0, match.index! - 9), match.index).includes("function")) continue;
      const where = `${relative(ROOT, file)}:${text.slice(0, match.index).split("\n").length}`;
      sites.push(match[1] === "invalid" ? { where, kind: "invalid", code: "validation_failed" } : { where, kind: "not_found", code: "not_found" });
    }
  }
  return { sites, unparsed };
}

/** The status the gateway answers a service's error of this kind with (through its real translation; a rate_limited error says when to retry). */
function statusOfKind(kind: ErrorKind): number {
  const error = new AppError(kind, "unlisted_code", "x", kind === "rate_limited" ? { metadata: { "retry-after": "1" } } : {});
  return problemFromConnect(toConnectError(error)!).problem.status;
}

describe("the error-code table", () => {
  it("holds every code the services raise, with the status of its kind", () => {
    const { sites, unparsed } = appErrorSites();
    // The scan finds the sites it should (a broken scan would pass vacuously).
    expect(sites.length).toBeGreaterThan(40);
    expect(unparsed).toEqual([]);
    const wrong = sites
      .filter((site) => !isErrorCode(site.code) || ERROR_CODES[site.code].status !== statusOfKind(site.kind))
      .map((site) => `${site.where}: ${site.code} (${site.kind}: ${statusOfKind(site.kind)}; table: ${isErrorCode(site.code) ? ERROR_CODES[site.code].status : "missing"})`);
    expect(wrong).toEqual([]);
  });

  it("holds every code the gateway throws (the compiler checks the type; this reads the sources too)", () => {
    const gateway = sources(join(ROOT, "services", "gateway", "src"));
    const thrown = gateway.flatMap((file) => [...readFileSync(file, "utf8").matchAll(/new Problem\(\s*"([a-z_]+)"/g)].map((m) => m[1]!));
    expect(thrown.length).toBeGreaterThan(20);
    expect(thrown.filter((code) => !isErrorCode(code))).toEqual([]);
  });

  it("gives each answer its table's status and title", () => {
    for (const code of Object.keys(ERROR_CODES) as Array<keyof typeof ERROR_CODES>) {
      const body = problemBody(new Problem(code, "detail"), "req");
      expect({ code, status: body.status, title: body.title }).toEqual({ code, status: ERROR_CODES[code].status, title: ERROR_CODES[code].title });
    }
  });

  it("passes a service's code it does not list on as it is, with its Connect code's status", () => {
    const err = toConnectError(new AppError("conflict", "brand_new_code", "the service says why"))!;
    const { problem } = problemFromConnect(err);
    expect(problemBody(problem, "req")).toMatchObject({ status: 409, code: "brand_new_code", title: "Conflict", detail: "the service says why" });
  });

  it("is what the OpenAPI document's error responses list, status by status", () => {
    const doc = buildOpenApiDocument();
    const statusOf: Record<string, number> = {
      BadRequest: 400,
      Unauthorized: 401,
      Forbidden: 403,
      NotFound: 404,
      Conflict: 409,
      UnprocessableContent: 422,
      PayloadTooLarge: 413,
      UnsupportedMediaType: 415,
      TooManyRequests: 429,
      InternalError: 500,
      Unavailable: 503,
      Timeout: 504,
    };
    for (const [name, status] of Object.entries(statusOf)) {
      const description = (doc.components.responses[name] as { description: string }).description;
      const listed = [...description.matchAll(/^- `([a-z_]+)` \(([^)]+)\)/gm)].map((m) => [m[1], m[2]]);
      expect(listed).toEqual(codesWithStatus(status).map((code) => [code, ERROR_CODES[code].title]));
    }
    // Every status a client can receive has its response (499 is for logs and metrics only; 405 is answered outside the operations).
    const statuses = new Set(Object.values(ERROR_CODES).map((entry) => entry.status));
    expect([...statuses].filter((s) => !Object.values(statusOf).includes(s)).sort()).toEqual([405, 499]);
  });
});
