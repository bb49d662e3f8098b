import { exceedsJsonDepth, JSON_MAX_DEPTH } from "../src/http/json-depth";
import { startHarness, type Harness } from "./support/harness";

/** `{"a":{"a":…"x"…}}` with `levels` objects. */
const nestedObject = (levels: number) => '{"a":'.repeat(levels) + '"x"' + "}".repeat(levels);

describe("exceedsJsonDepth", () => {
  it("counts arrays and objects, the outermost as level 1", () => {
    expect(exceedsJsonDepth("{}", 1)).toBe(false);
    expect(exceedsJsonDepth('{"a":[]}', 1)).toBe(true);
    expect(exceedsJsonDepth('{"a":[]}', 2)).toBe(false);
    expect(exceedsJsonDepth("[[[1],[2]],[3]]", 3)).toBe(false);
    expect(exceedsJsonDepth("[[[1],[2]],[3]]", 2)).toBe(true);
    expect(exceedsJsonDepth(nestedObject(JSON_MAX_DEPTH))).toBe(false);
    expect(exceedsJsonDepth(nestedObject(JSON_MAX_DEPTH + 1))).toBe(true);
  });

  it("ignores brackets inside strings, escaped quotes included", () => {
    expect(exceedsJsonDepth('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(exceedsJsonDepth('{"a":"\\"[[[["}', 1)).toBe(false);
    expect(exceedsJsonDepth('{"a\\\\":[[]]}', 2)).toBe(true);
    expect(exceedsJsonDepth('{"[[": "\\\\", "b": [[]]}', 2)).toBe(true);
  });

  it("scans a million brackets without recursion", () => {
    expect(exceedsJsonDepth("[".repeat(1_000_000) + "]".repeat(1_000_000))).toBe(true);
  });
});

describe("JSON depth at the edge (defect 4)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());
  beforeEach(() => {
    h.fake.calls.length = 0;
  });

  const json = { "content-type": "application/json" };

  it("refuses metadata nested 50 deep with a 400 naming the limit, before any service call", async () => {
    const res = await h.request("POST", "/api/v1/subscribers", {
      rawBody: `{"email":"deep@example.com","metadata":${nestedObject(50)}}`,
      headers: json,
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("json_too_deep");
    expect(res.body.detail).toContain(`${JSON_MAX_DEPTH} levels`);
    expect(h.fake.calls).toHaveLength(0);
  });

  it("refuses 100,000 nested arrays with a 400 and keeps serving", async () => {
    const res = await h.request("POST", "/api/v1/tags", { rawBody: "[".repeat(100_000) + "]".repeat(100_000), headers: json });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("json_too_deep");
    const after = await h.request("GET", "/api/v1/tags");
    expect(after.status).toBe(200);
  });

  it("refuses variables one level too deep on preview and send, and takes the limit itself", async () => {
    const tooDeep = await h.request("POST", "/api/v1/emails/send", {
      rawBody: `{"template_slug":"x","to":"a@example.com","variables":${nestedObject(JSON_MAX_DEPTH)}}`,
      headers: json,
    });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.code).toBe("json_too_deep");
    const preview = await h.request("POST", "/api/v1/templates/tpl_x/preview", {
      rawBody: `{"variables":${nestedObject(JSON_MAX_DEPTH)}}`,
      headers: json,
    });
    expect(preview.body.code).toBe("json_too_deep");
    // At the limit the body passes the edge (the fake has no such template: 404).
    const atLimit = await h.request("POST", "/api/v1/templates/tpl_x/preview", {
      rawBody: `{"variables":${nestedObject(JSON_MAX_DEPTH - 1)}}`,
      headers: json,
    });
    expect(atLimit.status).toBe(404);
  });

  it("states the limit in the OpenAPI document", () => {
    expect(h.running.gateway.openapi.info.description).toContain(`at most ${JSON_MAX_DEPTH} levels deep`);
  });
});
