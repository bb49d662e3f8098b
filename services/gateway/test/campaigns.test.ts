import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { campaigns } from "@emailsvc/proto";
import { AppError } from "@emailsvc/errors";
import { HEADER_ACCOUNT, HEADER_ACTOR, HEADER_MODE } from "@emailsvc/tenancy";
import { DATE_TIME_PATTERN } from "../src/openapi/kit";
import { timestampFromRfc3339 } from "../src/routes/json";
import { startHarness, type Harness } from "./support/harness";

// The campaign routes over a fake CampaignService: the mapping of REST to
// calls and back, the send's optional body and its send_at, the 409s of the
// state machine passing through, and (through the harness's response check)
// every answer against the OpenAPI document.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());
beforeEach(() => {
  h.campaigns.calls.length = 0;
});

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ZERO_COUNTS = {
  total: 0,
  pending: 0,
  queued: 0,
  sent: 0,
  failed: 0,
  skipped: 0,
  skipped_by_reason: { unsubscribed: 0, erased: 0, suppressed: 0, cancelled: 0 },
  snapshot_complete: false,
};

async function draft(): Promise<{ id: string } & Record<string, unknown>> {
  const res = await h.request("POST", "/api/v1/campaigns", {
    body: { name: "November news", template_id: "tpl_x", tag_filter: { include_tags: [] } },
  });
  expect(res.status).toBe(201);
  return res.body;
}

const send = (id: string, body?: unknown) => h.request("POST", `/api/v1/campaigns/${id}/send`, body === undefined ? {} : { body });

function expectCountsAddUp(counts: typeof ZERO_COUNTS): void {
  const { total, pending, queued, sent, failed, skipped, skipped_by_reason: by } = counts;
  expect(pending + queued + sent + failed + skipped).toBe(total);
  expect(by.unsubscribed + by.erased + by.suppressed + by.cancelled).toBe(skipped);
}

describe("the campaign JSON", () => {
  it("has the sending fields, null and zero for a draft", async () => {
    const created = await draft();
    expect(created).toEqual({
      id: expect.stringMatching(/^cmp_/),
      name: "November news",
      template_id: "tpl_x",
      tag_filter: { include_tags: [], match: "any", exclude_tags: [], metadata: [] },
      status: "draft",
      send_at: null,
      started_at: null,
      finished_at: null,
      failure_reason: null,
      template_version: null,
      total_recipients: null,
      counts: ZERO_COUNTS,
      created_at: expect.stringMatching(RFC3339_UTC),
      updated_at: expect.stringMatching(RFC3339_UTC),
    });
    const list = await h.request("GET", "/api/v1/campaigns?limit=500");
    expect(list.body.items.find((c: { id: string }) => c.id === created.id)).toEqual(created);
  });

  it("carries a failed campaign's reason and its finish", async () => {
    const { id } = await draft();
    h.campaigns.force(id, {
      status: campaigns.CampaignStatus.FAILED,
      failureReason: "schedule_missed",
      finishedAt: timestampFromDate(new Date("2027-01-15T08:00:00Z")),
    });
    const res = await h.request("GET", `/api/v1/campaigns/${id}`);
    expect(res.body).toMatchObject({ status: "failed", failure_reason: "schedule_missed", finished_at: "2027-01-15T08:00:00.000Z", total_recipients: null });
  });
});

describe("POST /api/v1/campaigns/{id}/send", () => {
  it("sends at once without a body: 200 with the campaign sending, its total_recipients and pinned version", async () => {
    const { id } = await draft();
    const res = await send(id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      status: "sending",
      send_at: null,
      started_at: expect.stringMatching(RFC3339_UTC),
      finished_at: null,
      template_version: 2,
      total_recipients: 3,
      counts: { ...ZERO_COUNTS, total: 3, pending: 3, snapshot_complete: true },
    });
    expectCountsAddUp(res.body.counts);
    const call = h.campaigns.lastCall!;
    expect(call.method).toBe("sendCampaign");
    expect(call.headers.get(HEADER_ACCOUNT)).toBe(h.accountId);
    expect(call.headers.get(HEADER_MODE)).toBe("test");
    expect(call.headers.get(HEADER_ACTOR)).toBe(`api_key:${h.keyId}`);
  });

  it("takes `{}`, and an empty body of any content type, as no body", async () => {
    expect((await send((await draft()).id, {})).body.status).toBe("sending");
    const form = await h.request("POST", `/api/v1/campaigns/${(await draft()).id}/send`, {
      rawBody: "",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(form.status).toBe(200);
    const blank = await h.request("POST", `/api/v1/campaigns/${(await draft()).id}/send`, {
      rawBody: " \n",
      headers: { "content-type": "application/json" },
    });
    expect(blank.status).toBe(200);
  });

  it("schedules with a future send_at, the instant kept whatever the offset", async () => {
    const { id } = await draft();
    const res = await send(id, { send_at: "2099-03-01T09:30:00.5+01:00" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "scheduled", send_at: "2099-03-01T08:30:00.500Z", started_at: null, total_recipients: null });
    expect(res.body.counts).toEqual(ZERO_COUNTS);
  });

  it("sends at once with a send_at now or in the past, also one before 1970", async () => {
    for (const sendAt of [new Date().toISOString(), "2020-01-01T00:00:00Z", "1969-07-20T20:17:40Z", "0001-01-01T00:00:00Z"]) {
      const res = await send((await draft()).id, { send_at: sendAt });
      expect({ sendAt, status: res.status, state: res.body.status }).toEqual({ sendAt, status: 200, state: "sending" });
    }
  });

  it.each([
    ["not a date", "tomorrow"],
    ["no offset", "2099-01-01T09:00:00"],
    ["a date only", "2099-01-01"],
    ["minute 99", "2024-01-01T12:99:00Z"],
    ["February 30", "2099-02-30T09:00:00Z"],
    ["February 29 of a common year", "2099-02-29T09:00:00Z"],
    ["April 31", "2099-04-31T09:00:00Z"],
    ["an offset of 24 hours", "2099-01-01T09:00:00+24:00"],
    ["ten fractional digits", "2099-01-01T09:00:00.1234567890Z"],
    ["the year 9999", "9999-12-31T23:59:59-23:59"],
    ["a number", 4102444800],
    ["null", null],
  ])("refuses %s as send_at with 400 naming it", async (_what, sendAt) => {
    const { id } = await draft();
    const res = await send(id, { send_at: sendAt });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("validation_failed");
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(["send_at"]);
    expect(h.campaigns.methods()).not.toContain("sendCampaign");
  });

  it("refuses unknown fields, a body that is not JSON, and malformed JSON", async () => {
    const { id } = await draft();
    const unknown = await send(id, { send_at: "2099-01-01T09:00:00Z", status: "sent" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual([{ field: "status", message: "is not a known field" }]);
    const text = await h.request("POST", `/api/v1/campaigns/${id}/send`, { rawBody: "send_at=now", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);
    const broken = await h.request("POST", `/api/v1/campaigns/${id}/send`, { rawBody: "{", headers: { "content-type": "application/json" } });
    expect(broken.status).toBe(400);
    expect(broken.body.code).toBe("invalid_json");
    expect(h.campaigns.methods()).not.toContain("sendCampaign");
  });

  it("accepts February 29 of a leap year, lower-case t and z, and a leap second", async () => {
    for (const sendAt of ["2096-02-29T09:00:00Z", "2000-02-29t00:00:00z", "2016-12-31T23:59:60Z"]) {
      const res = await send((await draft()).id, { send_at: sendAt });
      expect({ sendAt, status: res.status }).toEqual({ sendAt, status: 200 });
    }
  });

  it("passes the service's 409 campaign_not_draft through, naming the state", async () => {
    const { id } = await draft();
    await send(id);
    const again = await send(id);
    expect(again.status).toBe(409);
    expect(again.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(again.body).toMatchObject({ code: "campaign_not_draft", detail: "the campaign is sending; only a draft can be sent", status: 409 });
  });

  it("passes a 400 of the service about send_at through with its field", async () => {
    const { id } = await draft();
    h.campaigns.failNext = new AppError("invalid", "invalid_request", "send_at is not a valid time", {
      fieldViolations: [{ field: "send_at", description: "is not a valid time" }],
    });
    const res = await send(id, { send_at: "2099-01-01T00:00:00Z" });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: "invalid_request", errors: [{ field: "send_at", message: "is not a valid time" }] });
  });

  it("answers 404 for a campaign that is none of this account's", async () => {
    const res = await send("cmp_nope");
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("not_found");
  });
});

describe("pause, resume and cancel", () => {
  it("move a campaign through its states, each answering 200 with the campaign", async () => {
    const { id } = await draft();
    await send(id);
    const paused = await h.request("POST", `/api/v1/campaigns/${id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id, status: "paused", total_recipients: 3 });
    expect(h.campaigns.lastCall!.method).toBe("pauseCampaign");

    const resumed = await h.request("POST", `/api/v1/campaigns/${id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.status).toBe("sending");
    expect(h.campaigns.lastCall!.method).toBe("resumeCampaign");

    const cancelled = await h.request("POST", `/api/v1/campaigns/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      status: "cancelled",
      finished_at: expect.stringMatching(RFC3339_UTC),
      counts: { total: 3, pending: 0, skipped: 3, skipped_by_reason: { cancelled: 3 } },
    });
    expectCountsAddUp(cancelled.body.counts);
    expect(h.campaigns.lastCall!.method).toBe("cancelCampaign");
  });

  it("cancels a scheduled campaign", async () => {
    const { id } = await draft();
    await send(id, { send_at: "2099-01-01T00:00:00Z" });
    const res = await h.request("POST", `/api/v1/campaigns/${id}/cancel`);
    expect(res.body).toMatchObject({ status: "cancelled", send_at: "2099-01-01T00:00:00.000Z", total_recipients: null });
  });

  it.each([
    ["pause", "draft", "the campaign is draft; only a sending campaign can be paused"],
    ["resume", "draft", "the campaign is draft; only a paused campaign can be resumed"],
    ["cancel", "draft", "the campaign is draft; only a scheduled, sending or paused campaign can be cancelled"],
  ])("pass the service's 409 campaign_state_conflict through: %s of a %s", async (action, _state, detail) => {
    const { id } = await draft();
    const res = await h.request("POST", `/api/v1/campaigns/${id}/${action}`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "campaign_state_conflict", title: "Campaign state does not allow this", detail });
  });

  it("pass 409 through naming a final state", async () => {
    const { id } = await draft();
    await send(id);
    h.campaigns.force(id, { status: campaigns.CampaignStatus.SENT });
    const res = await h.request("POST", `/api/v1/campaigns/${id}/pause`);
    expect(res.status).toBe(409);
    expect(res.body.detail).toBe("the campaign is sent; only a sending campaign can be paused");
  });

  it("ignore a body, as every operation without one does", async () => {
    const { id } = await draft();
    await send(id);
    const res = await h.request("POST", `/api/v1/campaigns/${id}/pause`, { body: { anything: true } });
    expect(res.status).toBe(200);
  });

  it("answer 404 for an unknown campaign", async () => {
    for (const action of ["pause", "resume", "cancel"]) {
      const res = await h.request("POST", `/api/v1/campaigns/cmp_nope/${action}`);
      expect({ action, status: res.status, code: res.body.code }).toEqual({ action, status: 404, code: "not_found" });
    }
  });
});

describe("methods and credentials", () => {
  it.each(["send", "pause", "resume", "cancel"])("answers another method on /%s with 405 and Allow: POST", async (action) => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await h.request(method, `/api/v1/campaigns/cmp_x/${action}`);
      expect({ method, status: res.status }).toEqual({ method, status: 405 });
      expect(res.headers.get("allow")).toBe("POST");
    }
  });

  it("wants an API key, and counts the operations as writes", async () => {
    const res = await h.request("POST", "/api/v1/campaigns/cmp_x/send", { key: null });
    expect(res.status).toBe(401);
    const doc = h.running.gateway.openapi;
    for (const action of ["send", "pause", "resume", "cancel"]) {
      expect(doc.paths[`/api/v1/campaigns/{id}/${action}`]!.post!["x-rate-limit-class"]).toBe("write");
    }
  });
});

describe("send_at as the gateway reads it", () => {
  const pattern = new RegExp(DATE_TIME_PATTERN);

  it("is the instant Date reads, to the nanosecond", () => {
    for (const text of ["2026-11-22T10:30:00Z", "1970-01-01T00:00:00.001+00:01", "2099-12-31T23:59:59.999-23:59", "2400-02-29T12:00:00+05:30"]) {
      expect(pattern.test(text)).toBe(true);
      expect(timestampDate(timestampFromRfc3339(text)).getTime()).toBe(Date.parse(text));
    }
    expect(timestampFromRfc3339("2026-01-01T00:00:00.123456789Z").nanos).toBe(123_456_789);
    // Date reads years below 100 as 19xx and refuses :60.
    expect(timestampFromRfc3339("0001-01-01T00:00:00Z").seconds).toBe(-62_135_596_800n);
    expect(timestampFromRfc3339("2016-12-31T23:59:60Z")).toEqual(timestampFromRfc3339("2017-01-01T00:00:00Z"));
  });

  it("follows the leap years of the Gregorian calendar", () => {
    for (const year of ["2000", "2024", "0000", "9996"]) expect({ year, ok: pattern.test(`${year}-02-29T00:00:00Z`) }).toEqual({ year, ok: true });
    for (const year of ["1900", "2100", "2023", "9998"]) expect({ year, ok: pattern.test(`${year}-02-29T00:00:00Z`) }).toEqual({ year, ok: false });
  });
});
